"""A fake Slack on loopback for the real slack_sdk / slack-bolt clients (integrations.md §2).

One aiohttp server on an ephemeral port plays three parts of Slack:
- the Web API at `/api/<method>`: auth.test (with the granted scopes in `x-oauth-scopes`),
  chat.postMessage (with metadata) / update / delete / postEphemeral, users.info (`people`: id
  → display name), conversations.replies (a thread, paged, with metadata), the three steps of
  files_upload_v2 (getUploadURLExternal, the upload, completeUploadExternal, which shares a file
  message in the thread),
  apps.connections.open; every call is recorded, and messages are kept per ts so tests read
  the thread as a person would see it;
- the Socket Mode websocket at `/link`: sends `hello`, then every envelope a test pushes, and
  records the client's acks;
- failures on demand: `fail("chat.postMessage", status=429, retry_after=0, times=2)`.

It checks the bot token on every Web API call and the app token on apps.connections.open, as
Slack does (`invalid_auth` for a wrong one), and plays a token revoked while the bot runs:
`revoke("token_revoked")` (or `invalid_auth`, `account_inactive`) until `restore()`.
`signed_headers` signs an HTTP-mode request body the way Slack does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestServer
from slack_sdk.signature import SignatureVerifier

from bot.slack.manifest import bot_scopes

BOT_TOKEN = "xoxb-test-token"
APP_TOKEN = "xapp-1-test-token"
SIGNING_SECRET = "test-signing-secret"
BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM = "T1"
WORKSPACE_URL = "https://tribunal-tests.slack.com/"  # auth.test's; never fetched


@dataclass
class Call:
    method: str
    params: dict[str, Any]


@dataclass
class Message:
    channel: str
    ts: str
    thread_ts: str | None
    text: str
    blocks: list[dict[str, Any]]
    username: str | None
    icon_emoji: str | None
    updates: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    files: list[dict[str, Any]] = field(default_factory=list)
    user: str = BOT_USER
    bot_id: str | None = BOT_ID

    def as_slack(self) -> dict[str, Any]:
        """The message as conversations.replies returns it."""
        out: dict[str, Any] = {"type": "message", "ts": self.ts, "text": self.text}
        out.update({"user": self.user, "blocks": self.blocks})
        if self.bot_id:
            out["bot_id"] = self.bot_id
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        if self.metadata:
            out["metadata"] = self.metadata
        if self.files:
            out["files"] = self.files
        return out

    def buttons(self) -> list[dict[str, Any]]:
        return [e for b in self.blocks if b.get("type") == "actions" for e in b["elements"]]

    def shown(self) -> str:
        """Everything a person reads in the message: its text and its blocks' texts."""
        parts = [self.text]
        for block in self.blocks:
            for item in (block.get("text"), *block.get("elements", ())):
                if isinstance(item, dict) and isinstance(item.get("text"), str):
                    parts.append(item["text"])
                elif isinstance(item, dict) and isinstance(item.get("text"), dict):
                    parts.append(item["text"].get("text", ""))
        return "\n".join(parts)


@dataclass
class Failure:
    method: str | None
    status: int
    times: int
    retry_after: int | None
    error: str
    skip: int = 0  # calls let through before the failures start


class FakeSlack:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.messages: dict[str, Message] = {}
        self.ephemerals: list[dict[str, Any]] = []
        self.files: list[dict[str, Any]] = []
        self.acks: list[dict[str, Any]] = []
        self.failures: list[Failure] = []
        self._uploads: dict[str, bytes] = {}
        self._names: dict[str, str] = {}  # file id → filename given to getUploadURLExternal
        self.roots: set[str] = set()  # thread parents people posted (not made by the fake)
        # Called with each message right after Slack stored it, before the answer goes back
        # (the SIGKILL test kills the bot there).
        self.on_post: Callable[[Message], None] | None = None
        self.scopes: list[str] = list(bot_scopes())  # granted to the bot token (x-oauth-scopes)
        self.bot_token = BOT_TOKEN  # the tokens Slack accepts
        self.app_token = APP_TOKEN
        self.revoked: str | None = None  # the error every bot-token call gets while revoked
        self.people: dict[str, str] = {}  # user id → display name (users.info)
        self.deleted: list[Message] = []  # messages chat.delete removed
        self._ts = itertools.count(1)
        self._envelopes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._changed = asyncio.Condition()
        self.server: TestServer | None = None

    # -- what tests set up -------------------------------------------------------------------

    def fail(
        self,
        method: str | None,
        *,
        status: int = 429,
        times: int = 1,
        retry_after: int | None = 0,
        error: str = "ratelimited",
        skip: int = 0,
    ) -> None:
        """After `skip` calls, the next `times` calls of `method` (any method: None) answer
        `status` with `error`."""
        self.failures.append(Failure(method, status, times, retry_after, error, skip))

    def revoke(self, error: str = "token_revoked") -> None:
        """From now on every call with the bot token answers `ok: false` with `error`."""
        self.revoked = error

    def restore(self) -> None:
        self.revoked = None

    async def push(self, payload: dict[str, Any], kind: str = "events_api") -> str:
        """Send one Socket Mode envelope to the connected client; returns its envelope id."""
        envelope_id = f"env-{len(self.acks)}-{next(self._ts)}"
        await self._envelopes.put(
            {
                "envelope_id": envelope_id,
                "type": kind,
                "accepts_response_payload": False,
                "payload": payload,
            }
        )
        return envelope_id

    @property
    def url(self) -> str:
        assert self.server is not None
        return str(self.server.make_url("/"))

    @property
    def api_url(self) -> str:
        return self.url + "api/"

    # -- what tests look at ------------------------------------------------------------------

    def called(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def thread(self, channel: str, thread_ts: str) -> list[Message]:
        """The replies in a thread, in posting order."""
        return [
            m for m in self.messages.values() if m.channel == channel and m.thread_ts == thread_ts
        ]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(predicate)

    # -- the server --------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/link", self._link)
        return app

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.calls.append(Call(method, params))
        try:
            failure = self._failure(method)
            if failure is not None:
                headers = (
                    {} if failure.retry_after is None else {"Retry-After": str(failure.retry_after)}
                )
                return web.json_response(
                    {"ok": False, "error": failure.error}, status=failure.status, headers=headers
                )
            app = method == "apps.connections.open"
            if token != (self.app_token if app else self.bot_token):
                return web.json_response({"ok": False, "error": "invalid_auth"})
            if self.revoked is not None and not app:
                return web.json_response({"ok": False, "error": self.revoked})
            scopes = (
                {"x-oauth-scopes": ",".join(self.scopes)}
                if method != "apps.connections.open"
                else {}
            )
            return web.json_response(self._answer(method, params), headers=scopes)
        finally:
            async with self._changed:
                self._changed.notify_all()

    def _failure(self, method: str) -> Failure | None:
        for failure in self.failures:
            if failure.times > 0 and failure.method in (None, method):
                if failure.skip > 0:
                    failure.skip -= 1
                    continue
                failure.times -= 1
                return failure
        return None

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "team_id": TEAM,
                "user": "tribunal",
                "url": WORKSPACE_URL,
            }
        if method == "users.info":
            user = params.get("user", "")
            if user not in self.people:
                return {"ok": False, "error": "user_not_found"}
            name = self.people[user]
            return {
                "ok": True,
                "user": {
                    "id": user,
                    "name": name.lower().replace(" ", "."),
                    "real_name": name,
                    "profile": {"display_name": name, "real_name": name},
                },
            }
        if method == "chat.postMessage":
            ts = f"1700000{next(self._ts):03d}.000100"
            self.messages[ts] = Message(
                channel=params["channel"],
                ts=ts,
                thread_ts=params.get("thread_ts"),
                text=params.get("text", ""),
                blocks=_json(params.get("blocks")) or [],
                username=params.get("username"),
                icon_emoji=params.get("icon_emoji"),
                metadata=_json(params.get("metadata")),
            )
            if self.on_post is not None:
                self.on_post(self.messages[ts])
            return {"ok": True, "channel": params["channel"], "ts": ts}
        if method == "chat.update":
            message = self.messages.get(params.get("ts", ""))
            if message is None or message.channel != params.get("channel"):
                return {"ok": False, "error": "message_not_found"}
            message.updates.append(params)
            message.text = params.get("text", message.text)
            blocks = _json(params.get("blocks"))
            if blocks is not None:
                message.blocks = blocks
            return {"ok": True, "channel": message.channel, "ts": message.ts}
        if method == "chat.delete":
            message = self.messages.get(params.get("ts", ""))
            if message is None or message.channel != params.get("channel"):
                return {"ok": False, "error": "message_not_found"}
            del self.messages[message.ts]
            self.deleted.append(message)
            return {"ok": True, "channel": message.channel, "ts": message.ts}
        if method == "chat.postEphemeral":
            self.ephemerals.append(params)
            return {"ok": True, "message_ts": f"1800000{next(self._ts):03d}.000100"}
        if method == "conversations.replies":
            return self._replies(params)
        if method == "files.getUploadURLExternal":
            if not params.get("filename") or not str(params.get("length", "")).isdigit():
                return {"ok": False, "error": "invalid_arguments"}
            file_id = f"F{next(self._ts)}"
            self._names[file_id] = params["filename"]
            return {"ok": True, "file_id": file_id, "upload_url": f"{self.url}upload/{file_id}"}
        if method == "files.completeUploadExternal":
            files = _json(params.get("files")) or []
            for item in files:
                name = self._names.get(item["id"], "")
                self.files.append(
                    {
                        **item,
                        "name": name,
                        "content": self._uploads.get(item["id"], b"").decode(),
                        "channel": params.get("channel_id"),
                        "thread_ts": params.get("thread_ts"),
                    }
                )
                # Shared in the thread: a file message, as a person sees it.
                if params.get("channel_id"):
                    ts = f"1700000{next(self._ts):03d}.000100"
                    self.messages[ts] = Message(
                        channel=params["channel_id"],
                        ts=ts,
                        thread_ts=params.get("thread_ts"),
                        text="",
                        blocks=[],
                        username=None,
                        icon_emoji=None,
                        files=[{"id": item["id"], "name": name, "title": item.get("title")}],
                    )
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title")} for f in files]}
        if method == "apps.connections.open":
            return {"ok": True, "url": self.url.replace("http", "ws", 1) + "link"}
        return {"ok": True}

    def _replies(self, params: dict[str, Any]) -> dict[str, Any]:
        """A thread: its parent (if posted here) and replies, oldest first, `limit` a page."""
        channel, ts = params.get("channel"), params.get("ts")
        thread = [
            m
            for m in self.messages.values()
            if m.channel == channel and (m.ts == ts or m.thread_ts == ts)
        ]
        if not thread and ts not in self.roots:
            return {"ok": False, "error": "thread_not_found"}
        start = int(params.get("cursor") or 0)
        limit = int(params.get("limit") or 100)
        page = thread[start : start + limit]
        more = start + limit < len(thread)
        return {
            "ok": True,
            "messages": [m.as_slack() for m in page],
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    async def _upload(self, request: web.Request) -> web.Response:
        self._uploads[request.match_info["file_id"]] = await request.read()
        return web.Response(text="OK")

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1}))

        async def pump() -> None:
            while True:
                envelope = await self._envelopes.get()
                await ws.send_str(json.dumps(envelope))

        pumping = asyncio.create_task(pump())
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self.acks.append(json.loads(msg.data))
                    async with self._changed:
                        self._changed.notify_all()
        finally:
            pumping.cancel()
        return ws


async def _params(request: web.Request) -> dict[str, Any]:
    """slack_sdk sends a method's arguments as JSON, a form, or the query string."""
    params: dict[str, Any] = dict(request.query)
    raw = await request.text()
    if request.content_type == "application/json" and raw:
        loaded = json.loads(raw)
        params.update(loaded if isinstance(loaded, dict) else {})
    else:
        params.update({k: v[0] for k, v in parse_qs(raw).items()})
    return params


def _json(value: Any) -> Any:
    if isinstance(value, str):
        return json.loads(value)
    return value


@asynccontextmanager
async def fake_slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    server = TestServer(fake.app(), host="127.0.0.1")
    await server.start_server()
    fake.server = server
    try:
        yield fake
    finally:
        await server.close()


def signed_headers(
    body: str,
    *,
    content_type: str = "application/json",
    secret: str = SIGNING_SECRET,
    timestamp: int | None = None,
    retry_num: int | None = None,
) -> dict[str, str]:
    """Headers Slack sends with an HTTP-mode request: a v0 signature over the body."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body) or ""
    headers = {
        "content-type": content_type,
        "x-slack-request-timestamp": ts,
        "x-slack-signature": signature,
    }
    if retry_num is not None:
        headers["x-slack-retry-num"] = str(retry_num)
        headers["x-slack-retry-reason"] = "http_timeout"
    return headers


def event_body(event: dict[str, Any], *, event_id: str) -> dict[str, Any]:
    """An Events API `event_callback` around `event`."""
    return {
        "type": "event_callback",
        "team_id": TEAM,
        "api_app_id": "A1",
        "event_id": event_id,
        "event_time": int(time.time()),
        "event": event,
    }


def click_body(
    *, user: str, action: str, value: str, channel: str, message_ts: str, thread_ts: str, n: int
) -> dict[str, Any]:
    """An interactivity `block_actions` payload: `user` clicked button `action` on a message."""
    return {
        "type": "block_actions",
        "user": {"id": user},
        "team": {"id": TEAM},
        "api_app_id": "A1",
        "trigger_id": f"trigger-{n}",
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": False,
        },
        "channel": {"id": channel},
        "message": {"ts": message_ts, "thread_ts": thread_ts},
        "actions": [
            {
                "type": "button",
                "action_id": action,
                "block_id": "tribunal_actions",
                "value": value,
                "action_ts": f"{time.time():.6f}-{n}",
            }
        ],
    }


@contextmanager
def fake_slack_in_thread() -> Iterator[FakeSlack]:
    """The fake on a loop of its own in a thread, for code that calls Slack synchronously
    (`tribunal doctor`). Set `scopes` or `fail(...)` before the calls; read `calls` after."""
    ready: queue.Queue[FakeSlack | BaseException] = queue.Queue()
    stop: asyncio.Event | None = None
    loop: asyncio.AbstractEventLoop | None = None

    async def run() -> None:
        nonlocal stop, loop
        stop, loop = asyncio.Event(), asyncio.get_running_loop()
        try:
            async with fake_slack() as fake:
                ready.put(fake)
                await stop.wait()
        except BaseException as exc:  # noqa: BLE001 (handed to the waiting test)
            ready.put(exc)

    thread = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
    thread.start()
    got = ready.get(timeout=30)
    if isinstance(got, BaseException):
        raise got
    try:
        yield got
    finally:
        assert loop is not None and stop is not None
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
