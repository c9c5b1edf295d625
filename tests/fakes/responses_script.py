"""Scripting vocabulary of the fake Responses API: replies, recorded requests and matchers.

See tests/fakes/responses_api.py for how they are used; everything here is re-exported there,
with the matchers both fakes share (tests/fakes/scripted_api.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from tests.fakes.scripted_api import Matcher

JSON = dict[str, Any]


# ---------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 100  # includes cached_tokens, as the real API counts them
    output_tokens: int = 20  # includes reasoning_tokens
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    def to_json(self) -> JSON:
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


NO_USAGE = Usage(0, 0)


@dataclass(frozen=True)
class Reply:
    """One answer of the fake. `items` are Responses API output items without ids (the fake adds
    them); `status` != 200 makes it an HTTP error with `message`; `failure` makes the stream end
    with response.failed carrying that message."""

    items: tuple[JSON, ...] = ()
    usage: Usage = field(default_factory=Usage)
    status: int = 200
    message: str = ""
    failure: str = ""
    delay_s: float = 0.0  # wait this long before answering (cut short by stop())

    def __add__(self, other: Reply) -> Reply:
        return Reply(items=self.items + other.items, usage=self.usage + other.usage)


def text(body: str, *, usage: Usage | None = None) -> Reply:
    content = [{"type": "output_text", "text": body, "annotations": []}]
    item = {"type": "message", "role": "assistant", "content": content}
    return Reply(items=(item,), usage=usage or Usage())


def structured(obj: Any, *, usage: Usage | None = None) -> Reply:
    """The answer to a json_schema request: the document as the message text."""
    return text(json.dumps(obj), usage=usage)


def function_call(name: str, arguments: JSON, *, usage: Usage | None = None) -> Reply:
    item = {"type": "function_call", "name": name, "arguments": json.dumps(arguments)}
    return Reply(items=(item,), usage=usage or Usage())


def shell(command: str, *, usage: Usage | None = None) -> Reply:
    """Ask Codex to run a shell command (its `exec_command` tool in 0.171)."""
    return function_call("exec_command", {"cmd": command}, usage=usage)


def reasoning(summary: str) -> Reply:
    item = {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}]}
    return Reply(items=(item,), usage=NO_USAGE)


def api_error(status: int, message: str = "fake failure") -> Reply:
    return Reply(status=status, message=message)


def stream_failure(message: str = "fake failure") -> Reply:
    return Reply(failure=message)


def delayed(reply: Reply, seconds: float) -> Reply:
    """The same reply, sent after `seconds` (a model that is slow to answer)."""
    return replace(reply, delay_s=seconds)


# ---------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: JSON

    @property
    def is_responses_call(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0] == "/v1/responses"

    @property
    def input_items(self) -> list[JSON]:
        items = self.body.get("input") or []
        if isinstance(items, str):
            return [{"type": "message", "role": "user", "content": items}]
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    def texts(self, *roles: str) -> list[str]:
        """The text parts of the input messages with one of these roles, in order."""
        out: list[str] = []
        for item in self.input_items:
            if item.get("type", "message") != "message" or item.get("role") not in roles:
                continue
            content = item.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out += [p["text"] for p in content if isinstance(p, dict) and "text" in p]
        return out

    @property
    def instructions(self) -> str:
        """Everything that instructs the model: top-level `instructions` and developer/system
        messages (Codex sends its base prompt and `developer_instructions` as the latter)."""
        parts = [str(self.body.get("instructions") or ""), *self.texts("developer", "system")]
        return "\n".join(p for p in parts if p)

    def user_texts(self) -> list[str]:
        return self.texts("user")

    def assistant_texts(self) -> list[str]:
        return self.texts("assistant")

    def tool_outputs(self) -> list[str]:
        """The outputs of earlier function calls that the client sends back, in order."""
        outs: list[str] = []
        for item in self.input_items:
            if item.get("type") == "function_call_output":
                output = item.get("output")
                outs.append(output if isinstance(output, str) else json.dumps(output))
        return outs

    def function_calls(self) -> list[tuple[str, JSON]]:
        """The earlier function calls (name, parsed arguments) in the conversation sent back."""
        calls: list[tuple[str, JSON]] = []
        for item in self.input_items:
            if item.get("type") == "function_call":
                try:
                    arguments = json.loads(item.get("arguments") or "{}")
                except ValueError:
                    arguments = {"_raw": item.get("arguments")}
                calls.append((str(item.get("name")), arguments))
        return calls

    def tool_output_text(self) -> str:
        return "\n".join(self.tool_outputs())

    @property
    def output_schema(self) -> JSON | None:
        """The JSON schema of `text.format`, when the client asked for structured output."""
        text_options = self.body.get("text")
        fmt = text_options.get("format") if isinstance(text_options, dict) else None
        if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
            return None
        schema = fmt.get("schema")
        return schema if isinstance(schema, dict) else None


# ---------------------------------------------------------------------------- matchers


def instructions_contain(fragment: str) -> Matcher[RecordedRequest]:
    return Matcher(lambda r, i: fragment in r.instructions, f"instructions~{fragment!r}")


def last_prompt_contains(fragment: str) -> Matcher[RecordedRequest]:
    def test(request: RecordedRequest, index: int) -> bool:
        texts = request.user_texts()
        return bool(texts) and fragment in texts[-1]

    return Matcher(test, f"last prompt~{fragment!r}")


def has_tool_output(fragment: str = "") -> Matcher[RecordedRequest]:
    """The last input item is a function call's output (containing `fragment`): the client ran
    the tool a reply asked for and comes back for the next step."""

    def test(request: RecordedRequest, index: int) -> bool:
        items = request.input_items
        if not items or items[-1].get("type") != "function_call_output":
            return False
        return fragment in request.tool_outputs()[-1]

    return Matcher(test, f"tool output~{fragment!r}")


def schema_requested() -> Matcher[RecordedRequest]:
    return Matcher(lambda r, i: r.output_schema is not None, "json_schema")
