"""A scripted fake of the OpenAI Responses API on loopback, for the Codex CLI and the openai SDK.

It speaks what Codex 0.171 (`codex exec`) sends: `POST /v1/responses` with `"stream": true`,
answered with server-sent events (response.created, per output item .added / text delta /
.done, then response.completed with usage, or response.failed); without `stream` the response
is one JSON object, as the openai SDK expects. `GET /v1/models` lists nothing. The key must come
as `Authorization: Bearer …` (any key; none gets 401). Any other path gets 404. Every request is
recorded.

Scripting is shared with tests/fakes/messages_api.py (tests/fakes/scripted_api.py): rules are
tried in the order they were added; the first rule whose matcher accepts the request and still
has replies left answers it; when none does, the default reply answers.

    with FakeResponsesAPI(default=text("DONE")) as fake:
        fake.script(~has_tool_output(), [shell("echo hi > out.txt")])
        fake.script(has_tool_output("exited with code 0"), [text("DONE\\nwrote out.txt")])
        env = fake.env()     # TRIBUNAL_CODEX_BASE_URL / TRIBUNAL_CODEX_API_KEY for the runner
        ...
        assert "out.txt" in fake.calls[1].tool_output_text()
        fake.assert_all_consumed()

Replies: `text(...)`, `shell(command)` (Codex's `exec_command` function call),
`function_call(name, arguments)`, `reasoning(summary)`, `structured(obj)` (the JSON text that
a `text.format` json_schema request gets), `api_error(status, message)` (HTTP error),
`stream_failure(message)` (HTTP 200, then response.failed), `delayed(reply, seconds)`; `a + b`
puts the items of both in one response. Each takes `usage=Usage(...)`, sent in
response.completed.
Matchers: `any_request`, `instructions_contain` (top-level instructions and developer/system
messages), `prompt_contains` (any user text), `last_prompt_contains`, `has_tool_output`,
`schema_requested`, `nth_call` (0-based over all /v1/responses calls); combine with `&`, `|`, `~`.

Codex retries: 429 and 5xx (and a failed stream) several times with backoff, so a test of a
failure that must be fast uses a 400; a 401 is also retried by Codex 0.171 (checked).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

from tests.fakes.responses_script import (
    JSON,
    NO_USAGE,
    RecordedRequest,
    Reply,
    Usage,
    api_error,
    delayed,
    function_call,
    has_tool_output,
    instructions_contain,
    last_prompt_contains,
    reasoning,
    schema_requested,
    shell,
    stream_failure,
    structured,
    text,
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
    "JSON",
    "NO_USAGE",
    "FakeResponsesAPI",
    "Matcher",
    "RecordedRequest",
    "Reply",
    "Script",
    "Usage",
    "any_request",
    "api_error",
    "delayed",
    "function_call",
    "has_tool_output",
    "instructions_contain",
    "last_prompt_contains",
    "nth_call",
    "prompt_contains",
    "reasoning",
    "schema_requested",
    "shell",
    "stream_failure",
    "structured",
    "text",
]

_ids = itertools.count(1)  # response, item, call and request ids, unique within the process


# ---------------------------------------------------------------------------- wire format


def response_json(reply: Reply, model: str) -> JSON:
    return {
        "id": f"resp_fake{next(_ids):04d}",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": model,
        "output": [_with_ids(item) for item in reply.items],
        "usage": reply.usage.to_json(),
    }


def _with_ids(item: JSON) -> JSON:
    prefix = {"message": "msg", "function_call": "fc", "reasoning": "rs"}.get(item["type"], "it")
    out = {"id": f"{prefix}_fake{next(_ids):04d}", "status": "completed", **item}
    if item["type"] == "function_call":
        out.setdefault("call_id", f"call_fake{next(_ids):04d}")
    return out


def sse_events(response: JSON, failure: str = "") -> Iterator[tuple[str, JSON]]:
    """The SSE event sequence the real API streams for one complete response."""
    started = {**response, "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "response": started}
    if failure:
        error = {"code": "server_error", "message": failure}
        failed = {**started, "status": "failed", "error": error}
        yield "response.failed", {"type": "response.failed", "response": failed}
        return
    for index, item in enumerate(response["output"]):
        pending = {**item, "status": "in_progress"}
        if item["type"] == "message":
            pending["content"] = []
        added = {"type": "response.output_item.added", "output_index": index, "item": pending}
        yield "response.output_item.added", added
        if item["type"] == "message":
            for part_index, part in enumerate(item["content"]):
                yield from _text_part_events(item["id"], index, part_index, part)
        done = {"type": "response.output_item.done", "output_index": index, "item": item}
        yield "response.output_item.done", done
    yield "response.completed", {"type": "response.completed", "response": response}


def _text_part_events(
    item_id: str, index: int, part_index: int, part: JSON
) -> Iterator[tuple[str, JSON]]:
    """One output_text part as the API streams it: part added, text delta(s), done."""
    where = {"item_id": item_id, "output_index": index, "content_index": part_index}
    empty = {**part, "text": ""}
    yield (
        "response.content_part.added",
        {"type": "response.content_part.added", **where, "part": empty},
    )
    delta = {"type": "response.output_text.delta", **where, "delta": part["text"], "logprobs": []}
    yield "response.output_text.delta", delta
    done = {"type": "response.output_text.done", **where, "text": part["text"], "logprobs": []}
    yield "response.output_text.done", done
    yield (
        "response.content_part.done",
        {"type": "response.content_part.done", **where, "part": part},
    )


class _Handler(FakeHandler[RecordedRequest]):
    fake: FakeResponsesAPI

    def _send_json(self, status: int, body: JSON) -> None:
        self._send(status, json.dumps(body).encode(), "application/json")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_body(status, data, content_type, {"x-request-id": f"req_fake{next(_ids):04d}"})

    def _error(self, status: int, message: str, error_type: str = "invalid_request_error") -> None:
        self._send_json(status, {"error": {"message": message, "type": error_type, "code": None}})

    def do_GET(self) -> None:
        self.fake._record(RecordedRequest("GET", self.path, self.lowered_headers(), {}))
        if self.path.split("?")[0] == "/v1/models":
            return self._send_json(200, {"object": "list", "data": [], "models": []})
        self._error(404, f"no GET {self.path}", "not_found_error")

    def do_POST(self) -> None:
        try:
            body = self.json_body()
        except ValueError as exc:
            return self._error(400, str(exc))
        request = RecordedRequest("POST", self.path, self.lowered_headers(), body)
        self.fake._record(request)
        if not (self.headers.get("authorization") or "").startswith("Bearer "):
            return self._error(401, "no Authorization: Bearer key", "authentication_error")
        if not request.is_responses_call:
            return self._error(404, f"no POST {self.path}", "not_found_error")
        reply = self.fake._choose(request)
        if reply.delay_s:
            self.fake._delay(reply.delay_s)  # answered even when stopping (cut short)
        if reply.status != 200:
            return self._error(reply.status, reply.message)
        response = response_json(reply, str(body.get("model", "gpt-fake")))
        if not body.get("stream"):
            return self._send_json(200, response)
        self._send(200, sse_body(sse_events(response, reply.failure)), "text/event-stream")


# ---------------------------------------------------------------------------- server


class FakeResponsesAPI(ScriptedServer[RecordedRequest, Reply]):
    """See ScriptedServer. `requests` has GET /v1/models too; `calls` only /v1/responses."""

    handler = _Handler
    thread_name = "fake-responses-api"

    def __init__(self, default: Reply | None = None) -> None:
        super().__init__(default or text("DONE"))

    @property
    def base_url(self) -> str:
        """With `/v1`, as the openai SDK's `base_url` and Codex's provider `base_url` expect."""
        return f"{self.url}/v1"

    def env(self, key: str = "sk-fake-openai") -> dict[str, str]:
        """The environment the Codex runner needs to talk to this fake."""
        return {"TRIBUNAL_CODEX_BASE_URL": self.base_url, "TRIBUNAL_CODEX_API_KEY": key}
