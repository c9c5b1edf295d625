"""Scripting vocabulary of the fake Messages API: replies, recorded requests and matchers.

See tests/fakes/messages_api.py for how they are used; everything here is re-exported there,
with the matchers both fakes share (tests/fakes/scripted_api.py).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tests.fakes.scripted_api import Matcher

STRUCTURED_OUTPUT_TOOL = "StructuredOutput"

ids = itertools.count(1)  # message, request and tool_use ids, unique within the test process


# ---------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 100
    output_tokens: int = 20
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    """One answer of the fake. `blocks` are Messages API content blocks; `status` != 200 makes it
    an API error with `error_type` and `text` as the message."""

    blocks: tuple[dict[str, Any], ...] = ()
    stop_reason: str = "end_turn"
    usage: Usage = field(default_factory=Usage)
    status: int = 200
    error_type: str = ""
    delay_s: float = 0.0  # wait this long before answering (cut short when the fake stops)
    # With delay_s: answer as soon as this is set (a test decides when the model answers).
    release: threading.Event | None = field(default=None, compare=False)
    # Set by `structured()`: for a request without the StructuredOutput tool (the anthropic SDK
    # with output_config), the object is sent as JSON text instead.
    structured: dict[str, Any] | None = None


def text(body: str, *, usage: Usage | None = None) -> Reply:
    return Reply(blocks=({"type": "text", "text": body},), usage=usage or Usage())


def tool_use(
    name: str, input: dict[str, Any], *, say: str = "", usage: Usage | None = None
) -> Reply:
    """A reply that calls one tool (stop_reason tool_use), optionally after some text."""
    return tool_uses([(name, input)], say=say, usage=usage)


def tool_uses(
    calls: Sequence[tuple[str, dict[str, Any]]], *, say: str = "", usage: Usage | None = None
) -> Reply:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": say}] if say else []
    for name, args in calls:
        blocks.append({"type": "tool_use", "name": name, "input": args})
    return Reply(blocks=tuple(blocks), stop_reason="tool_use", usage=usage or Usage())


def structured(obj: dict[str, Any], *, usage: Usage | None = None) -> Reply:
    """The final answer as a JSON object (see the module docstring)."""
    reply = tool_use(STRUCTURED_OUTPUT_TOOL, obj, usage=usage)
    return Reply(blocks=reply.blocks, stop_reason="tool_use", usage=reply.usage, structured=obj)


def api_error(
    status: int, message: str = "fake failure", *, error_type: str = "invalid_request_error"
) -> Reply:
    """An HTTP error. Clients retry 408/409/429/5xx with backoff; 400/401/403/404 fail fast."""
    return Reply(status=status, error_type=error_type, blocks=({"type": "text", "text": message},))


def slow(reply: Reply, seconds: float) -> Reply:
    """The same reply, sent after `seconds` (for timeouts and cancellation)."""
    return replace(reply, delay_s=seconds)


def held(reply: Reply, release: threading.Event, at_most_s: float = 120.0) -> Reply:
    """The same reply, sent once the test sets `release` (or after `at_most_s`): the model is
    busy exactly as long as the test needs, whatever the machine's load."""
    return replace(reply, delay_s=at_most_s, release=release)


# ---------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def system(self) -> str:
        """The system prompt as one string (it may be sent as a string or a list of blocks)."""
        system = self.body.get("system") or ""
        if isinstance(system, str):
            return system
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return messages if isinstance(messages, list) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        tools = self.body.get("tools")
        return tools if isinstance(tools, list) else []

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("name")) for t in self.tools if isinstance(t, dict)]

    @property
    def is_messages_call(self) -> bool:
        return self.path.split("?")[0] == "/v1/messages"

    def user_texts(self) -> list[str]:
        """Every text a user message carries (strings and text blocks, tool results excluded)."""
        out: list[str] = []
        for message in self.messages:
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out += [b.get("text", "") for b in content if b.get("type") == "text"]
        return out

    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks sent since the model's last answer (what its tools answered).

        Everything after the last assistant message counts, not just the last message: Claude
        Code may put a separate user message (a "USD budget" reminder) after the tool results."""
        blocks: list[dict[str, Any]] = []
        for message in reversed(self.messages):
            if message.get("role") == "assistant":
                break
            content = message.get("content")
            if isinstance(content, list):
                blocks[:0] = [
                    b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
        return blocks

    def tool_result_text(self) -> str:
        parts: list[str] = []
        for block in self.tool_results():
            content = block.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [c.get("text", "") for c in content if isinstance(c, dict)]
        return "\n".join(parts)


# ---------------------------------------------------------------------------- matchers


def system_contains(fragment: str) -> Matcher[RecordedRequest]:
    return Matcher(lambda r, i: fragment in r.system, f"system~{fragment!r}")


def has_tool_result() -> Matcher[RecordedRequest]:
    return Matcher(lambda r, i: bool(r.tool_results()), "tool_result")


def tool_offered(name: str) -> Matcher[RecordedRequest]:
    return Matcher(lambda r, i: name in r.tool_names, f"offers {name}")
