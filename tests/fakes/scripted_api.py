"""What the scripted fake model APIs share: matchers, scripts, and the loopback HTTP server.

tests/fakes/messages_api.py (Anthropic Messages) and tests/fakes/responses_api.py (OpenAI
Responses) differ in their wire format and in what a request or a reply holds; the scripting
rules are the same and live here: rules are tried in the order they were added; the first rule
whose matcher accepts the request and still has replies left answers it (its replies are
consumed in order); when none does, the default reply answers. Each fake subclasses
`ScriptedServer` and `FakeHandler` and re-exports the matchers it supports.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

RequestT = TypeVar("RequestT")
ReplyT = TypeVar("ReplyT")


# ---------------------------------------------------------------------------- matchers


@dataclass(frozen=True)
class Matcher(Generic[RequestT]):
    """A named test of a request and its 0-based index among the answered calls."""

    test: Callable[[RequestT, int], bool]
    name: str

    def __call__(self, request: RequestT, index: int) -> bool:
        return self.test(request, index)

    def __and__(self, other: Matcher[RequestT]) -> Matcher[RequestT]:
        return Matcher(lambda r, i: self(r, i) and other(r, i), f"({self.name} & {other.name})")

    def __or__(self, other: Matcher[RequestT]) -> Matcher[RequestT]:
        return Matcher(lambda r, i: self(r, i) or other(r, i), f"({self.name} | {other.name})")

    def __invert__(self) -> Matcher[RequestT]:
        return Matcher(lambda r, i: not self(r, i), f"~{self.name}")


class HasUserTexts(Protocol):
    def user_texts(self) -> list[str]: ...


def any_request() -> Matcher[Any]:
    return Matcher(lambda r, i: True, "any")


def prompt_contains(fragment: str) -> Matcher[Any]:
    """Any user text of the request contains `fragment`."""

    def test(request: HasUserTexts, index: int) -> bool:
        return any(fragment in t for t in request.user_texts())

    return Matcher(test, f"prompt~{fragment!r}")


def nth_call(n: int) -> Matcher[Any]:
    return Matcher(lambda r, i: i == n, f"call#{n}")


# ---------------------------------------------------------------------------- scripts


@dataclass
class Script(Generic[RequestT, ReplyT]):
    matcher: Matcher[RequestT]
    replies: list[ReplyT]
    repeat_last: bool = False
    used: int = 0

    @property
    def exhausted(self) -> bool:
        return self.used >= len(self.replies) and not (self.repeat_last and self.replies)

    def take(self) -> ReplyT:
        reply = self.replies[min(self.used, len(self.replies) - 1)]
        self.used += 1
        return reply


# ---------------------------------------------------------------------------- server


class ScriptedServer(Generic[RequestT, ReplyT]):
    """The fake server (a daemon thread on 127.0.0.1, ephemeral port). Use as a context manager
    or call start()/stop(). Thread-safe: rules and records are guarded by one lock.

    `requests` has every request the fake received; `answered` pairs each scripted call (the
    API's one model endpoint) with the reply it got, and `calls` lists those requests.

    `tls`, set before start, makes it serve HTTPS with that (server) context."""

    handler: ClassVar[type[FakeHandler[Any]]]
    thread_name: ClassVar[str]

    def __init__(self, default: ReplyT) -> None:
        self.default = default
        self.requests: list[RequestT] = []
        self.answered: list[tuple[RequestT, ReplyT]] = []
        self._scripts: list[Script[RequestT, ReplyT]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.tls: ssl.SSLContext | None = None

    # -- scripting

    def script(
        self, matcher: Matcher[RequestT], replies: Sequence[ReplyT], *, repeat_last: bool = False
    ) -> Script[RequestT, ReplyT]:
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
    def calls(self) -> list[RequestT]:
        """The requests to the scripted endpoint, in arrival order."""
        with self._lock:
            return [r for r, _ in self.answered]

    def _choose(self, request: RequestT) -> ReplyT:
        with self._lock:
            index = len(self.answered)
            reply = self.default
            for rule in self._scripts:
                if not rule.exhausted and rule.matcher(request, index):
                    reply = rule.take()
                    break
            self.answered.append((request, reply))
            return reply

    def _record(self, request: RequestT) -> None:
        with self._lock:
            self.requests.append(request)

    def _delay(self, seconds: float, release: threading.Event | None = None) -> bool:
        """Wait `seconds` (a slow model), or until `release` is set; True when the fake is
        stopping (the wait is cut short)."""
        if release is None:
            return self._stopping.wait(seconds)
        deadline = time.monotonic() + seconds
        while not release.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
            if self._stopping.is_set() or time.monotonic() >= deadline:
                break
        return self._stopping.is_set()

    # -- lifecycle

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The server's root, `http://127.0.0.1:<port>` (https with `tls`)."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._stopping.clear()
        handler = type("Handler", (self.handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        if self.tls is not None:
            # The handshake is made on accept, in the server's thread: enough for one client.
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # stop() waits for one poll; keep it short
            daemon=True,
            name=self.thread_name,
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FakeHandler(BaseHTTPRequestHandler, Generic[RequestT]):
    """HTTP plumbing of a fake: quiet, keep-alive, JSON bodies in, JSON or SSE bodies out."""

    fake: ScriptedServer[RequestT, Any]
    protocol_version = "HTTP/1.1"
    # The headers and the body go out in two writes; with Nagle's algorithm on, the body waits
    # for the client's (delayed) ACK of the headers: every answer came ~40 ms late, and the
    # benchmarks measured the fake instead of Tribunal. The real APIs do not do that.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read `requests`
        pass

    def send_body(
        self, status: int, data: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def lowered_headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def json_body(self) -> dict[str, Any]:
        """The request body as a JSON object (an empty body is `{}`); ValueError otherwise, with
        a message for the 400 answer."""
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            raise ValueError(f"bad JSON body: {exc}") from None
        return body


def sse_body(events: Iterable[tuple[str, dict[str, Any]]]) -> bytes:
    """Server-sent events, `event:` and `data:` lines per event, as the real APIs stream them."""
    text = "".join(f"event: {name}\ndata: {json.dumps(payload)}\n\n" for name, payload in events)
    return text.encode()
