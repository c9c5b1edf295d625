"""A scripted fake of an OpenAI-compatible Chat Completions API on loopback, for the openai SDK
(`chat.completions.create`, as reference opinions call it).

`POST /v1/chat/completions` (JSON, not streamed) is answered from the script, shared with the
other fakes (tests/fakes/scripted_api.py); the key must come as `Authorization: Bearer …`; any
other path gets 404. Every request is recorded.

    with FakeChatAPI(default=text("VERDICT: REVISE\\nfix the test")) as fake:
        fake.script(prompt_contains("parser"), [slow(text("VERDICT: PROCEED"), 0.3)])
        AsyncOpenAI(base_url=f"{fake.url}/v1", api_key="k", max_retries=0)

Replies: `text(body, usage=Usage(...))`, `api_error(status, message)`, `slow(reply, seconds)`,
`redirect(location, status=307)` (an endpoint that moved, or one sending the client elsewhere).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field, replace
from typing import Any

from tests.fakes.scripted_api import (
    FakeHandler,
    Matcher,
    ScriptedServer,
    any_request,
    nth_call,
    prompt_contains,
)

__all__ = [
    "FakeChatAPI",
    "Matcher",
    "RecordedRequest",
    "Reply",
    "Usage",
    "any_request",
    "api_error",
    "nth_call",
    "prompt_contains",
    "redirect",
    "slow",
    "text",
]

_ids = itertools.count(1)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 100
    completion_tokens: int = 20


@dataclass(frozen=True)
class Reply:
    content: str = ""
    usage: Usage = field(default_factory=Usage)
    status: int = 200
    message: str = ""
    delay_s: float = 0.0
    location: str = ""  # with a 3xx status


def text(body: str, *, usage: Usage | None = None) -> Reply:
    return Reply(content=body, usage=usage or Usage())


def api_error(status: int, message: str = "fake failure") -> Reply:
    return Reply(status=status, message=message)


def redirect(location: str, status: int = 307) -> Reply:
    """307/308 keep the method and body: the SDK would send the request again to `location`."""
    return Reply(status=status, location=location)


def slow(reply: Reply, seconds: float) -> Reply:
    return replace(reply, delay_s=seconds)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    def user_texts(self) -> list[str]:
        out = []
        for m in self.body.get("messages") or []:
            if isinstance(m, dict) and m.get("role") == "user":
                content = m.get("content")
                if isinstance(content, str):
                    out.append(content)
                elif isinstance(content, list):
                    out += [p["text"] for p in content if isinstance(p, dict) and "text" in p]
        return out


class _Handler(FakeHandler[RecordedRequest]):
    fake: FakeChatAPI

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        self.send_body(status, json.dumps(body).encode(), "application/json")

    def _error(self, status: int, message: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": "fake_error"}})

    def do_GET(self) -> None:
        self._error(404, f"no GET {self.path}")

    def do_POST(self) -> None:
        try:
            body = self.json_body()
        except ValueError as exc:
            return self._error(400, str(exc))
        request = RecordedRequest(self.path, self.lowered_headers(), body)
        self.fake._record(request)
        if not (self.headers.get("authorization") or "").startswith("Bearer "):
            return self._error(401, "no Authorization: Bearer")
        if self.path.split("?")[0] != "/v1/chat/completions":
            return self._error(404, f"no POST {self.path}")
        reply = self.fake._choose(request)
        if reply.delay_s and self.fake._delay(reply.delay_s):
            return  # stopping: drop the connection unanswered
        if reply.location:
            return self.send_body(reply.status, b"", "text/plain", {"location": reply.location})
        if reply.status != 200:
            return self._error(reply.status, reply.message)
        self._send_json(
            200,
            {
                "id": f"chatcmpl-fake{next(_ids):04d}",
                "object": "chat.completion",
                "created": 0,
                "model": str(body.get("model", "fake")),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": reply.content},
                    }
                ],
                "usage": {
                    "prompt_tokens": reply.usage.prompt_tokens,
                    "completion_tokens": reply.usage.completion_tokens,
                    "total_tokens": reply.usage.prompt_tokens + reply.usage.completion_tokens,
                },
            },
        )


class FakeChatAPI(ScriptedServer[RecordedRequest, Reply]):
    handler = _Handler
    thread_name = "fake-chat-api"

    def __init__(self, default: Reply | None = None) -> None:
        super().__init__(default or text("VERDICT: PROCEED\nthe work stands"))
