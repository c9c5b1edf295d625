"""A scripted fake of the OpenAI Responses API on loopback, for the Codex CLI and the openai SDK.

It speaks what Codex 0.171 (`codex exec`) sends: `POST /v1/responses` with `"stream": true`,
answered with server-sent events (response.created, per output item .added / text delta /
.done, then response.completed with usage, or response.failed); without `stream` the response
is one JSON object, as the openai SDK expects. `GET /v1/models` lists nothing. The key must come
as `Authorization: Bearer …` (any key; none gets 401). Any other path gets 404. Every request is
recorded.

Scripting is the same idea as tests/fakes/messages_api.py: rules are tried in the order they
were added; the first rule whose matcher accepts the request and still has replies left answers
it; when none does, the default reply answers.

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
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JSON = dict[str, Any]

_ids = itertools.count(1)


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


@dataclass(frozen=True)
class Matcher:
    test: Callable[[RecordedRequest, int], bool]
    name: str

    def __call__(self, request: RecordedRequest, index: int) -> bool:
        return self.test(request, index)

    def __and__(self, other: Matcher) -> Matcher:
        return Matcher(lambda r, i: self(r, i) and other(r, i), f"({self.name} & {other.name})")

    def __or__(self, other: Matcher) -> Matcher:
        return Matcher(lambda r, i: self(r, i) or other(r, i), f"({self.name} | {other.name})")

    def __invert__(self) -> Matcher:
        return Matcher(lambda r, i: not self(r, i), f"~{self.name}")


def any_request() -> Matcher:
    return Matcher(lambda r, i: True, "any")


def instructions_contain(fragment: str) -> Matcher:
    return Matcher(lambda r, i: fragment in r.instructions, f"instructions~{fragment!r}")


def prompt_contains(fragment: str) -> Matcher:
    return Matcher(lambda r, i: any(fragment in t for t in r.user_texts()), f"prompt~{fragment!r}")


def last_prompt_contains(fragment: str) -> Matcher:
    def test(request: RecordedRequest, index: int) -> bool:
        texts = request.user_texts()
        return bool(texts) and fragment in texts[-1]

    return Matcher(test, f"last prompt~{fragment!r}")


def has_tool_output(fragment: str = "") -> Matcher:
    """The last input item is a function call's output (containing `fragment`): the client ran
    the tool a reply asked for and comes back for the next step."""

    def test(request: RecordedRequest, index: int) -> bool:
        items = request.input_items
        if not items or items[-1].get("type") != "function_call_output":
            return False
        return fragment in request.tool_outputs()[-1]

    return Matcher(test, f"tool output~{fragment!r}")


def schema_requested() -> Matcher:
    return Matcher(lambda r, i: r.output_schema is not None, "json_schema")


def nth_call(n: int) -> Matcher:
    return Matcher(lambda r, i: i == n, f"call#{n}")


# ---------------------------------------------------------------------------- server


@dataclass
class Script:
    matcher: Matcher
    replies: list[Reply]
    repeat_last: bool = False
    used: int = 0

    @property
    def exhausted(self) -> bool:
        return self.used >= len(self.replies) and not (self.repeat_last and self.replies)

    def take(self) -> Reply:
        reply = self.replies[min(self.used, len(self.replies) - 1)]
        self.used += 1
        return reply


class FakeResponsesAPI:
    """The fake server (a daemon thread on 127.0.0.1, ephemeral port). Use as a context manager
    or call start()/stop(). Thread-safe: rules and records are guarded by one lock."""

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or text("DONE")
        self.requests: list[RecordedRequest] = []  # every request, GET /v1/models included
        self.answered: list[tuple[RecordedRequest, Reply]] = []  # /v1/responses calls only
        self._scripts: list[Script] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting

    def script(
        self, matcher: Matcher, replies: Sequence[Reply], *, repeat_last: bool = False
    ) -> Script:
        rule = Script(matcher, list(replies), repeat_last)
        with self._lock:
            self._scripts.append(rule)
        return rule

    def assert_all_consumed(self) -> None:
        with self._lock:
            left = [
                (s.matcher.name, len(s.replies) - s.used)
                for s in self._scripts
                if s.used < len(s.replies)
            ]
        assert not left, f"scripted replies never asked for: {left}"

    @property
    def calls(self) -> list[RecordedRequest]:
        """The /v1/responses requests, in arrival order."""
        with self._lock:
            return [r for r, _ in self.answered]

    def _choose(self, request: RecordedRequest) -> Reply:
        with self._lock:
            index = len(self.answered)
            reply = self.default
            for rule in self._scripts:
                if not rule.exhausted and rule.matcher(request, index):
                    reply = rule.take()
                    break
            self.answered.append((request, reply))
            return reply

    # -- lifecycle

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """With `/v1`, as the openai SDK's `base_url` and Codex's provider `base_url` expect."""
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self, key: str = "sk-fake-openai") -> dict[str, str]:
        """The environment the Codex runner needs to talk to this fake."""
        return {"TRIBUNAL_CODEX_BASE_URL": self.base_url, "TRIBUNAL_CODEX_API_KEY": key}

    def start(self) -> FakeResponsesAPI:
        self._stopping.clear()
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, daemon=True, name="fake-responses-api"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeResponsesAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)


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


class _Handler(BaseHTTPRequestHandler):
    fake: FakeResponsesAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read `requests`
        pass

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", f"req_fake{next(_ids):04d}")
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, body: JSON) -> None:
        self._send(status, json.dumps(body).encode(), "application/json")

    def _error(self, status: int, message: str, error_type: str = "invalid_request_error") -> None:
        self._send_json(status, {"error": {"message": message, "type": error_type, "code": None}})

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def do_GET(self) -> None:
        self.fake._record(RecordedRequest("GET", self.path, self._headers(), {}))
        if self.path.split("?")[0] == "/v1/models":
            return self._send_json(200, {"object": "list", "data": [], "models": []})
        self._error(404, f"no GET {self.path}", "not_found_error")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            return self._error(400, f"bad JSON body: {exc}")
        request = RecordedRequest("POST", self.path, self._headers(), body)
        self.fake._record(request)
        if not (self.headers.get("authorization") or "").startswith("Bearer "):
            return self._error(401, "no Authorization: Bearer key", "authentication_error")
        if not request.is_responses_call:
            return self._error(404, f"no POST {self.path}", "not_found_error")
        reply = self.fake._choose(request)
        if reply.delay_s:
            self.fake._stopping.wait(reply.delay_s)
        if reply.status != 200:
            return self._error(reply.status, reply.message)
        response = response_json(reply, str(body.get("model", "gpt-fake")))
        if not body.get("stream"):
            return self._send_json(200, response)
        data = "".join(
            f"event: {name}\ndata: {json.dumps(payload)}\n\n"
            for name, payload in sse_events(response, reply.failure)
        )
        self._send(200, data.encode(), "text/event-stream")
