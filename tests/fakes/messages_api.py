"""A scripted fake of the Anthropic Messages API on loopback, for Claude Code and the anthropic SDK.

It speaks what both clients send: `POST /v1/messages` (with or without `?beta=true`), answered
as SSE when the body has `"stream": true` and as one JSON message otherwise;
`POST /v1/messages/count_tokens`; the key in `x-api-key` or `Authorization: Bearer` (any key is
accepted, a request with neither gets 401). Any other path gets 404. It records every request.

Scripting (tests/fakes/scripted_api.py, shared with the fake Responses API): rules are tried in
the order they were added; the first rule whose matcher accepts the request and still has
replies left answers it (its replies are consumed in order); when none does, the default reply
answers. A typical owner → reviewer → arbiter run:

    with FakeMessagesAPI(default=text("DONE")) as fake:
        fake.script(system_contains("You are the owner"), [
            tool_use("Edit", {"file_path": f"{ws}/a.py", "old_string": "1", "new_string": "2"}),
            text("DONE\nchanged a.py"),          # answers the request carrying the tool_result
        ])
        fake.script(system_contains("You are the reviewer"), [text("CHANGES_REQUESTED\nfix")])
        fake.script(system_contains("You are the arbiter"), [structured({"verdict": "REVISE"})])
        spec_env = fake.env()          # ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY for the runner
        ...
        assert "Write" not in fake.calls[1].tool_names   # what the reviewer was offered
        fake.assert_all_consumed()

Match roles on a phrase of the role's system prompt: the Claude runner appends the role prompt to
Claude Code's own (long) system prompt, which is the same for every role. `fake.calls` are the
/v1/messages requests in order; `fake.requests` also has count_tokens and refused requests;
`fake.answered` pairs each call with the reply it got. A pytest fixture, `fake_messages_api`,
gives a started fake (import it into the test module).

Replies: `text(...)`, `tool_use(name, input)` (several tools in one reply: `tool_uses(...)`),
`structured(obj)` (see below), `api_error(status, ...)`; each takes `usage=Usage(...)`; a slow
model is `slow(reply, seconds)`, one that answers when the test sets a threading.Event
`held(reply, event)`. Matchers: `system_contains`, `prompt_contains` (any user text),
`has_tool_result`, `tool_offered`, `nth_call` (0-based, over all /v1/messages calls),
`any_request`; combine them with `&`, `|` and `~`. A script with `repeat_last=True` keeps
answering with its last reply.

What Claude Code 2.1.332 does that a script must allow for (checked): it retries an API error,
even a 400, several times (6 requests within ~2 s) before the turn fails, so script a lasting
error with `repeat_last=True`; its Bash tool refuses `sleep N` commands ("Blocked: sleep …").

Structured output (what Claude Code 2.1.332 does with `--json-schema`, i.e. the Agent SDK's
`output_format={"type": "json_schema", "schema": ...}`; checked): it does NOT send
`output_config.format`. It offers the model one more client tool, `StructuredOutput`, whose
`input_schema` is the requested schema ("You MUST call this tool exactly once at the end of your
response"). When the model calls it, the CLI validates the input against the schema, records the
tool_result "Structured output provided successfully" and ends the turn at once (no further
request), with the input in the `result` event's `structured_output` (the SDK's
`ResultMessage.structured_output`) and its JSON as `result`. If the model answers with text
only, the CLI sends one more request whose last user message starts with
"[structured-output-enforce] You MUST call the StructuredOutput tool"; if the model still does not
call it, the turn ends as a success with no structured output. So the fake's answer to a schema
request is a `tool_use` of `StructuredOutput` with the object as its input: `structured(obj)`.
For a request that does not offer that tool (the anthropic SDK with `output_config.format`),
`structured(obj)` answers with the object as JSON text, as the API does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.messages_script import (
    STRUCTURED_OUTPUT_TOOL,
    RecordedRequest,
    Reply,
    Usage,
    api_error,
    has_tool_result,
    held,
    ids,
    slow,
    structured,
    system_contains,
    text,
    tool_offered,
    tool_use,
    tool_uses,
)
from tests.fakes.scripted_api import (
    FakeHandler,
    Matcher,
    Script,
    ScriptedServer,
    any_request,
    nth_call,
    prompt_contains,
    sse_body,
)

__all__ = [
    "STRUCTURED_OUTPUT_TOOL",
    "FakeMessagesAPI",
    "Matcher",
    "RecordedRequest",
    "Reply",
    "Script",
    "Usage",
    "any_request",
    "api_error",
    "fake_messages_api",
    "has_tool_result",
    "held",
    "nth_call",
    "prompt_contains",
    "slow",
    "structured",
    "system_contains",
    "text",
    "tool_offered",
    "tool_use",
    "tool_uses",
]


# ---------------------------------------------------------------------------- wire format


def message_json(reply: Reply, model: str, request: RecordedRequest) -> dict[str, Any]:
    # Fresh tool_use ids per answer: a reply may be sent more than once (defaults, repeat_last).
    blocks = [
        {**b, "id": f"toolu_fake{next(ids):04d}"} if b["type"] == "tool_use" else b
        for b in reply.blocks
    ]
    if reply.structured is not None and STRUCTURED_OUTPUT_TOOL not in request.tool_names:
        blocks = [{"type": "text", "text": json.dumps(reply.structured)}]
        stop = "end_turn"
    else:
        stop = reply.stop_reason
    usage = reply.usage
    return {
        "id": f"msg_fake{next(ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
        },
    }


def sse_events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The SSE event sequence the real API streams for one complete message."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            empty = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": empty},
        )
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class _Handler(FakeHandler[RecordedRequest]):
    fake: FakeMessagesAPI

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        headers = {"request-id": f"req_fake{next(ids):04d}"}
        if status >= 400:
            # Fail fast: the client should not retry a scripted error unless the status says so.
            retry = status in (408, 409, 429) or status >= 500
            headers["x-should-retry"] = "true" if retry else "false"
        self.send_body(status, json.dumps(body).encode(), "application/json", headers)

    def _error(self, status: int, error_type: str, message: str) -> None:
        self._send_json(
            status, {"type": "error", "error": {"type": error_type, "message": message}}
        )

    def do_GET(self) -> None:
        self._error(404, "not_found_error", f"no GET {self.path}")

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        try:
            body = self.json_body()
        except ValueError as exc:
            return self._error(400, "invalid_request_error", str(exc))
        request = RecordedRequest(self.path, self.lowered_headers(), body)
        self.fake._record(request)
        if not (self.headers.get("x-api-key") or self.headers.get("authorization")):
            return self._error(401, "authentication_error", "no x-api-key or Authorization")
        route = self.path.split("?")[0]
        if route == "/v1/messages/count_tokens":
            return self._send_json(200, {"input_tokens": 10})
        if route != "/v1/messages":
            return self._error(404, "not_found_error", f"no POST {route}")
        reply = self.fake._choose(request)
        if reply.delay_s and self.fake._delay(reply.delay_s, reply.release):
            return  # stopping: drop the connection unanswered
        if reply.status != 200:
            return self._error(reply.status, reply.error_type, reply.blocks[0]["text"])
        message = message_json(reply, str(body.get("model", "claude-fake")), request)
        if not body.get("stream"):
            return self._send_json(200, message)
        self.send_body(200, sse_body(sse_events(message)), "text/event-stream")


# ---------------------------------------------------------------------------- server


class FakeMessagesAPI(ScriptedServer[RecordedRequest, Reply]):
    """See ScriptedServer. `requests` has count_tokens too; `calls` only /v1/messages."""

    handler = _Handler
    thread_name = "fake-messages-api"

    def __init__(self, default: Reply | None = None) -> None:
        super().__init__(default or text("DONE"))

    def env(self, key: str = "sk-ant-fake") -> dict[str, str]:
        """The environment a runner needs to talk to this fake."""
        return {"ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": key}


@pytest.fixture
def fake_messages_api() -> Iterator[FakeMessagesAPI]:
    """A started fake with the default reply; import this name into a test module to use it."""
    with FakeMessagesAPI() as fake:
        yield fake
