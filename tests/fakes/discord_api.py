"""A fake Discord on loopback: REST under `/api/v10` and the Gateway websocket at `/`, on one
port, for discord.py's real `client.start()` (grown from the shared notes'
examples/discord_gateway/fake_discord.py; the payload fields it sends are the ones discord.py
2.7 needs, see probe_results.txt there).

    fake = await FakeDiscord().start()
    settings: DISCORD_API_URL=fake.api_url (REST; the Gateway is what GET /gateway/bot returns)
    msg = await fake.say(ALICE, "please build a parser", mention=True)
    rec = await fake.wait_for(lambda r: r.path.endswith("/threads"))
    await fake.click(card_id, "tribunal:approve:1", ALICE)

What it does as Discord does: a message posted by the bot or a webhook comes back as
MESSAGE_CREATE (the adapter must ignore its own); a thread started from a message has the
message's id; the Gateway keeps a session's events, so a client that RESUMEs after the socket
was closed (`drop_gateway`) gets the ones it missed (and, with `replay_overlap`, some it had
already, as a real resume may); a 429 carries `Via` (without it discord.py takes it for a
Cloudflare ban). Knobs: `webhooks_allowed` (the bot's Manage Webhooks), `app_flags` (the
message-content intent), `rate_limit(...)` (the next matching REST call gets a 429).
Every REST call is recorded (`calls`), and messages are kept (`messages`) with their edits.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

API = "/api/v10"
TOKEN = "fake-discord-token"
BOT_ID = 1100000000000000001
APP_ID = BOT_ID
OWNER_ID = 1100000000000000002
ALICE = 1100000000000000003  # an approver by user id
BOB = 1100000000000000004  # not an approver
CAROL = 1100000000000000005  # an approver by role
OTHER_BOT = 1100000000000000006  # another bot in the server
GUILD_ID = 1200000000000000001
CHANNEL_ID = 1300000000000000001  # the registered channel
OTHER_CHANNEL_ID = 1300000000000000002  # a channel of no group
BOT_ROLE = 1250000000000000001  # the bot's managed role: Manage Webhooks when allowed
APPROVER_ROLE = 1250000000000000002
MANAGE_WEBHOOKS = 1 << 29
EVERYONE_PERMISSIONS = 1071698660929  # view, send, threads, embeds, files, history; no webhooks
MESSAGE_CONTENT_INTENT = 1 << 18  # application flag GATEWAY_MESSAGE_CONTENT
_snowflakes = itertools.count(1400000000000000001)


def snowflake() -> str:
    return str(next(_snowflakes))


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def user_obj(uid: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(uid),
        "username": name,
        "discriminator": "0",
        "global_name": name,
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
        "flags": 0,
    }


USERS = {
    BOT_ID: user_obj(BOT_ID, "tribunal", bot=True),
    ALICE: user_obj(ALICE, "alice"),
    BOB: user_obj(BOB, "bob"),
    CAROL: user_obj(CAROL, "carol"),
    OTHER_BOT: user_obj(OTHER_BOT, "helper-bot", bot=True),
}
ROLES_OF: dict[int, list[str]] = {ALICE: [], BOB: [], CAROL: [str(APPROVER_ROLE)], OTHER_BOT: []}


def member_obj(uid: int, roles: list[str], *, with_user: bool = True) -> dict[str, Any]:
    member: dict[str, Any] = {
        "roles": roles,
        "joined_at": "2024-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "nick": None,
        "avatar": None,
    }
    if with_user:
        member["user"] = USERS[uid]
    return member


def role_obj(rid: int, name: str, permissions: int, position: int) -> dict[str, Any]:
    return {
        "id": str(rid),
        "name": name,
        "permissions": str(permissions),
        "position": position,
        "color": 0,
        "hoist": False,
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }


def text_channel_obj(cid: int, name: str) -> dict[str, Any]:
    return {
        "id": str(cid),
        "type": 0,
        "guild_id": str(GUILD_ID),
        "name": name,
        "position": 0,
        "permission_overwrites": [],
        "topic": None,
        "nsfw": False,
        "parent_id": None,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "flags": 0,
    }


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # discord.py decodes JSON only when the content type is exactly "application/json".
    return web.Response(
        body=json.dumps(data).encode(),
        status=status,
        headers={"Content-Type": "application/json", **(headers or {})},
    )


@dataclass
class Call:
    """One REST call as the fake saw it."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    files: list[tuple[str, str]] = field(default_factory=list)  # (filename, text)
    message_id: str | None = None  # the message it created or edited

    @property
    def channel(self) -> str | None:
        parts = self.path.split("/")
        return parts[4] if len(parts) > 4 and parts[3] == "channels" else None


@dataclass
class _Session:
    """One Gateway session: its events survive a dropped socket, for RESUME."""

    session_id: str
    ws: web.WebSocketResponse | None
    seq: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class FakeDiscord:
    def __init__(self, *, webhooks_allowed: bool = True, app_flags: int = MESSAGE_CONTENT_INTENT):
        self.webhooks_allowed = webhooks_allowed
        self.app_flags = app_flags
        self.token = TOKEN
        self.port = 0
        self.calls: list[Call] = []
        self.gateway_ops: list[tuple[str, Any]] = []  # ("identify"|"resume"|"connect", detail)
        self.messages: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, dict[str, Any]] = {
            str(CHANNEL_ID): text_channel_obj(CHANNEL_ID, "tribunal"),
            str(OTHER_CHANNEL_ID): text_channel_obj(OTHER_CHANNEL_ID, "random"),
        }
        self.webhooks: dict[str, dict[str, Any]] = {}
        self.replayed: list[tuple[int, str, Any]] = []  # (seq, event, its id) sent on RESUME
        self.replay_overlap = 0  # events a RESUME sends again although the client had them
        self.threads_allowed = True  # the bot's Create Public Threads
        self.echo = True  # MESSAGE_CREATE for messages the bot and its webhooks post
        self._rate_limits: list[tuple[Callable[[str, str], bool], float]] = []
        self._sessions: dict[str, _Session] = {}
        self._current: _Session | None = None
        self._interaction_messages: dict[str, str] = {}  # interaction token → message id
        self._nonces: dict[tuple[str, str], str] = {}  # (channel, enforced nonce) → message id
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None

    # -- plumbing ----------------------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{API}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    async def start(self) -> FakeDiscord:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        r = app.router
        r.add_get("/", self._gateway)
        r.add_get(API + "/users/@me", self._me)
        r.add_get(API + "/oauth2/applications/@me", self._app)
        r.add_get(API + "/applications/@me", self._app)
        r.add_get(API + "/gateway/bot", self._gateway_bot)
        r.add_get(API + "/channels/{cid}", self._get_channel)
        r.add_get(API + "/guilds/{gid}", self._get_guild)
        r.add_get(API + "/guilds/{gid}/members/{uid}", self._get_member)
        r.add_post(API + "/channels/{cid}/messages", self._post_message)
        r.add_patch(API + "/channels/{cid}/messages/{mid}", self._patch_message)
        r.add_post(API + "/channels/{cid}/messages/{mid}/threads", self._post_thread)
        r.add_get(API + "/channels/{cid}/webhooks", self._get_webhooks)
        r.add_post(API + "/channels/{cid}/webhooks", self._post_webhooks)
        r.add_post(API + "/webhooks/{wid}/{token}", self._post_webhook)
        r.add_patch(API + "/webhooks/{wid}/{token}/messages/{mid}", self._patch_webhook)
        r.add_post(API + "/interactions/{iid}/{token}/callback", self._callback)
        r.add_route("*", API + "/{tail:.*}", self._unhandled)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        server = getattr(site, "_server", None)
        self.port = server.sockets[0].getsockname()[1] if server is not None else self.port
        return self

    async def stop(self) -> None:
        for session in self._sessions.values():
            if session.ws is not None and not session.ws.closed:
                await session.ws.close(code=1000)
        if self._runner is not None:
            await self._runner.cleanup()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, pred: Callable[[Call], bool], timeout: float = 10.0) -> Call:
        """The first recorded REST call `pred` accepts (waiting for it)."""
        async with asyncio.timeout(timeout), self._changed:
            while True:
                for call in self.calls:
                    if pred(call):
                        return call
                await self._changed.wait()

    async def wait_until(self, pred: Callable[[], bool], timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(pred)

    def rate_limit(self, pred: Callable[[str, str], bool], retry_after: float) -> None:
        """The next REST call (method, path) that `pred` accepts gets a 429 (with `Via`)."""
        self._rate_limits.append((pred, retry_after))

    # -- the Gateway ---------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        self.gateway_ops.append(("connect", dict(request.query)))
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}}))
        session: _Session | None = None
        async for frame in ws:
            if frame.type is not WSMsgType.TEXT:
                continue
            payload = json.loads(frame.data)
            op = payload.get("op")
            if op == 1:
                await ws.send_str(json.dumps({"op": 11}))
            elif op == 2:
                session = await self._identify(ws, payload["d"])
            elif op == 6:
                session = await self._resume(ws, payload["d"])
        if session is not None and session.ws is ws:
            session.ws = None
        return ws

    async def _identify(self, ws: web.WebSocketResponse, data: dict[str, Any]) -> _Session | None:
        self.gateway_ops.append(("identify", {"intents": data.get("intents")}))
        asks_content = int(data.get("intents") or 0) & (1 << 15)
        if asks_content and not self.app_flags & MESSAGE_CONTENT_INTENT:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return None
        session = _Session(f"session-{snowflake()}", ws)
        self._sessions[session.session_id] = session
        self._current = session
        await self._dispatch(session, "READY", self._ready(session))
        await self._dispatch(session, "GUILD_CREATE", self._guild())
        await self._notify()
        return session

    async def _resume(self, ws: web.WebSocketResponse, data: dict[str, Any]) -> _Session | None:
        session = self._sessions.get(str(data.get("session_id")))
        self.gateway_ops.append(("resume", {"seq": data.get("seq")}))
        if session is None or data.get("token") != self.token:
            await ws.send_str(json.dumps({"op": 9, "d": False}))  # invalid session
            return None
        async with session.lock:
            session.ws = ws
            seen = int(data.get("seq") or 0)
            for event in session.log:
                again = event["t"] not in ("READY", "GUILD_CREATE")
                if event["s"] > seen or (again and event["s"] > seen - self.replay_overlap):
                    await ws.send_str(json.dumps(event))
                    self.replayed.append((event["s"], event["t"], event["d"].get("id")))
            session.seq += 1
            await ws.send_str(json.dumps({"op": 0, "t": "RESUMED", "s": session.seq, "d": {}}))
        self._current = session
        await self._notify()
        return session

    async def _dispatch(self, session: _Session, event: str, data: dict[str, Any]) -> None:
        async with session.lock:
            session.seq += 1
            frame = {"op": 0, "t": event, "s": session.seq, "d": data}
            session.log.append(frame)
            if session.ws is not None and not session.ws.closed:
                await session.ws.send_str(json.dumps(frame))

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Push a Gateway event (kept for a resume when the socket is down)."""
        assert self._current is not None, "no Gateway session yet"
        await self._dispatch(self._current, event, data)

    @property
    def identified(self) -> bool:
        return self._current is not None

    async def drop_gateway(self, code: int = 4000) -> None:
        """Close the client's socket as Discord does when it asks for a reconnect (4000 is
        resumable; discord.py comes back with RESUME)."""
        assert self._current is not None and self._current.ws is not None
        ws, self._current.ws = self._current.ws, None
        await ws.close(code=code)

    def _ready(self, session: _Session) -> dict[str, Any]:
        return {
            "v": 10,
            "user": USERS[BOT_ID],
            "guilds": [{"id": str(GUILD_ID), "unavailable": True}],
            "session_id": session.session_id,
            "resume_gateway_url": self.gateway_url,
            "application": {"id": str(APP_ID), "flags": self.app_flags},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "shard": [0, 1],
        }

    def _guild(self) -> dict[str, Any]:
        bot_roles = [str(BOT_ROLE)] if self.webhooks_allowed else []
        return {
            "id": str(GUILD_ID),
            "name": "Fake Guild",
            "icon": None,
            "owner_id": str(OWNER_ID),
            "afk_timeout": 300,
            "afk_channel_id": None,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "system_channel_id": None,
            "system_channel_flags": 0,
            "features": [],
            "roles": self._roles(),
            "emojis": [],
            "stickers": [],
            "member_count": 4,
            "large": False,
            "unavailable": False,
            "joined_at": "2024-01-01T00:00:00+00:00",
            "channels": [c for c in self.channels.values() if c["type"] == 0],
            "threads": [  # active ones only, as Discord does
                c
                for c in self.channels.values()
                if c["type"] == 11 and not c["thread_metadata"]["archived"]
            ],
            "members": [member_obj(BOT_ID, bot_roles)]
            + [member_obj(uid, roles) for uid, roles in ROLES_OF.items()],
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    def _roles(self) -> list[dict[str, Any]]:
        return [
            role_obj(GUILD_ID, "@everyone", EVERYONE_PERMISSIONS, 0),
            role_obj(BOT_ROLE, "tribunal", MANAGE_WEBHOOKS, 1),
            role_obj(APPROVER_ROLE, "approvers", 0, 2),
        ]

    # -- what people do ----------------------------------------------------------------------------

    async def say(
        self,
        uid: int,
        text: str,
        *,
        channel: int | str = CHANNEL_ID,
        mention: bool = False,
        mid: str | None = None,
    ) -> dict[str, Any]:
        """A person's message (MESSAGE_CREATE); `mention` puts the bot's mention first."""
        content = f"<@{BOT_ID}> {text}" if mention else text
        message = self._message(str(channel), USERS[uid], content, mid=mid)
        message["mentions"] = [USERS[BOT_ID]] if mention else []
        message["member"] = member_obj(uid, ROLES_OF[uid], with_user=False)
        self.messages[message["id"]] = message
        await self.dispatch("MESSAGE_CREATE", message)
        return message

    async def click(
        self, message_id: str, custom_id: str, uid: int, *, seen: dict[str, Any] | None = None
    ) -> str:
        """A click on a button of a message (INTERACTION_CREATE); returns the interaction id.
        `seen`: the message as the clicker's client still shows it (buttons and all)."""
        message = seen or self.messages[message_id]
        iid = snowflake()
        token = f"itoken-{iid}"
        self._interaction_messages[token] = message_id
        channel = self.channels[message["channel_id"]]
        member = member_obj(uid, ROLES_OF[uid])
        member["permissions"] = str(EVERYONE_PERMISSIONS)
        await self.dispatch(
            "INTERACTION_CREATE",
            {
                "id": iid,
                "application_id": str(APP_ID),
                "type": 3,
                "token": token,
                "version": 1,
                "attachment_size_limit": 10 * 1024 * 1024,
                "guild_id": str(GUILD_ID),
                "guild": {"id": str(GUILD_ID), "locale": "en-US", "features": []},
                "guild_locale": "en-US",
                "channel_id": message["channel_id"],
                "channel": channel,
                "member": member,
                "message": message,
                "data": {"custom_id": custom_id, "component_type": 2},
                "locale": "en-US",
                "app_permissions": str(EVERYONE_PERMISSIONS),
                "entitlements": [],
                "authorizing_integration_owners": {"0": str(GUILD_ID)},
                "context": 0,
            },
        )
        return iid

    # -- REST --------------------------------------------------------------------------------------

    def _message(
        self,
        channel: str,
        author: dict[str, Any],
        content: str,
        *,
        mid: str | None = None,
        body: dict[str, Any] | None = None,
        webhook_id: str | None = None,
    ) -> dict[str, Any]:
        body = body or {}
        message: dict[str, Any] = {
            "id": mid or snowflake(),
            "type": 0,
            "channel_id": channel,
            "guild_id": str(GUILD_ID),
            "author": author,
            "content": content,
            "timestamp": now_iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": body.get("embeds") or [],
            "components": body.get("components") or [],
            "pinned": False,
            "flags": body.get("flags") or 0,
        }
        if webhook_id is not None:
            message["webhook_id"] = webhook_id
        return message

    async def _record(
        self, request: web.Request, *, label: str | None = None
    ) -> tuple[Call, web.Response | None]:
        """Read and record the call; a 429 when a rate limit was asked for this one."""
        body: Any = None
        files: list[tuple[str, str]] = []
        if request.content_type == "application/json":
            body = await request.json()
        elif request.content_type.startswith("multipart/"):
            form = await request.post()
            for key, value in form.items():
                if key == "payload_json":
                    body = json.loads(str(value))
                elif hasattr(value, "file"):
                    files.append((value.filename, value.file.read().decode("utf-8")))
        call = Call(request.method, label or request.path, dict(request.query), body, files)
        for index, (pred, retry_after) in enumerate(self._rate_limits):
            if pred(request.method, request.path):
                del self._rate_limits[index]
                call.body = {"rate_limited": retry_after, "body": body}
                self.calls.append(call)
                await self._notify()
                headers = {
                    "Via": "1.1 google",
                    "X-RateLimit-Limit": "5",
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset-After": str(retry_after),
                    "X-RateLimit-Bucket": "fake-bucket",
                    "X-RateLimit-Scope": "user",
                    "Retry-After": str(int(retry_after) + 1),
                }
                error = {
                    "message": "You are being rate limited.",
                    "retry_after": retry_after,
                    "global": False,
                }
                return call, _json(error, 429, headers)
        self.calls.append(call)
        return call, None

    async def _done(self, call: Call, response: web.Response) -> web.Response:
        await self._notify()
        return response

    async def _me(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if request.headers.get("Authorization") != f"Bot {self.token}":
            return await self._done(call, _json({"message": "401: Unauthorized", "code": 0}, 401))
        return await self._done(call, limited or _json({**USERS[BOT_ID], "verified": True}))

    async def _app(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        return await self._done(
            call,
            _json(
                {
                    "id": str(APP_ID),
                    "name": "tribunal",
                    "description": "",
                    "icon": None,
                    "bot_public": False,
                    "bot_require_code_grant": False,
                    "verify_key": "00" * 32,
                    "owner": user_obj(OWNER_ID, "owner"),
                    "flags": self.app_flags,
                    "team": None,
                    "interactions_endpoint_url": None,
                }
            ),
        )

    async def _gateway_bot(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        return await self._done(
            call,
            _json(
                {
                    "url": self.gateway_url,
                    "shards": 1,
                    "session_start_limit": {
                        "total": 1000,
                        "remaining": 999,
                        "reset_after": 0,
                        "max_concurrency": 1,
                    },
                }
            ),
        )

    async def _get_channel(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        channel = self.channels.get(request.match_info["cid"])
        if channel is None:
            return await self._done(call, _json({"message": "Unknown Channel", "code": 10003}, 404))
        return await self._done(call, _json(channel))

    async def _get_guild(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        guild = {k: v for k, v in self._guild().items() if k not in ("channels", "members")}
        return await self._done(call, _json(guild))

    async def _get_member(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        uid = int(request.match_info["uid"])
        roles = (
            ([str(BOT_ROLE)] if self.webhooks_allowed else [])
            if uid == BOT_ID
            else ROLES_OF.get(uid, [])
        )
        return await self._done(call, _json(member_obj(uid, roles)))

    async def _post_message(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        cid = request.match_info["cid"]
        if cid not in self.channels:
            return await self._done(call, _json({"message": "Unknown Channel", "code": 10003}, 404))
        body = call.body or {}
        nonce = body.get("nonce") if body.get("enforce_nonce") else None
        if nonce and (cid, nonce) in self._nonces:  # Discord: the message made the first time
            call.message_id = self._nonces[(cid, nonce)]
            return await self._done(call, _json(self.messages[call.message_id]))
        message = self._message(cid, USERS[BOT_ID], body.get("content") or "", body=body)
        message["attachments"] = self._attachments(call)
        if nonce:
            self._nonces[(cid, nonce)] = message["id"]
        return await self._created(call, message)

    def _attachments(self, call: Call) -> list[dict[str, Any]]:
        return [
            {
                "id": snowflake(),
                "filename": name,
                "size": len(text.encode()),
                "url": f"{self.api_url}/attachments/{name}",
                "proxy_url": f"{self.api_url}/p/{name}",
            }
            for name, text in call.files
        ]

    async def _created(self, call: Call, message: dict[str, Any]) -> web.Response:
        self.messages[message["id"]] = message
        call.message_id = message["id"]
        if self.echo and self._current is not None:
            await self.dispatch("MESSAGE_CREATE", message)
        return await self._done(call, _json(message))

    def _edit(self, call: Call, mid: str) -> dict[str, Any]:
        message = self.messages[mid]
        for key in ("content", "embeds", "components"):
            if isinstance(call.body, dict) and key in call.body:
                message[key] = call.body[key] if call.body[key] is not None else []
        message["edited_timestamp"] = now_iso()
        call.message_id = mid
        return message

    async def _patch_message(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        mid = request.match_info["mid"]
        if mid not in self.messages:
            return await self._done(call, _json({"message": "Unknown Message", "code": 10008}, 404))
        return await self._done(call, _json(self._edit(call, mid)))

    async def _post_thread(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        cid, mid = request.match_info["cid"], request.match_info["mid"]
        if not self.threads_allowed:
            error = {"message": "Missing Permissions", "code": 50013}
            return await self._done(call, _json(error, 403))
        if mid in self.channels:
            error = {
                "message": "A thread has already been created for this message",
                "code": 160004,
            }
            return await self._done(call, _json(error, 400))
        body = call.body or {}
        thread = {
            "id": mid,
            "type": 11,
            "guild_id": str(GUILD_ID),
            "parent_id": cid,
            "owner_id": str(BOT_ID),
            "name": body.get("name", "thread"),
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 0,
            "member_count": 1,
            "total_message_sent": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": body.get("auto_archive_duration", 1440),
                "archive_timestamp": now_iso(),
                "locked": False,
                "create_timestamp": now_iso(),
            },
            "member": {"id": mid, "user_id": str(BOT_ID), "join_timestamp": now_iso(), "flags": 0},
        }
        self.channels[mid] = thread
        call.message_id = mid
        if self._current is not None:
            await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return await self._done(call, _json(thread, 201))

    async def _get_webhooks(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        if not self.webhooks_allowed:
            return await self._done(
                call, _json({"message": "Missing Permissions", "code": 50013}, 403)
            )
        cid = request.match_info["cid"]
        return await self._done(
            call, _json([w for w in self.webhooks.values() if w["channel_id"] == cid])
        )

    async def _post_webhooks(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        if not self.webhooks_allowed:
            return await self._done(
                call, _json({"message": "Missing Permissions", "code": 50013}, 403)
            )
        wid = snowflake()
        hook = {
            "id": wid,
            "type": 1,
            "channel_id": request.match_info["cid"],
            "guild_id": str(GUILD_ID),
            "name": (call.body or {}).get("name", "hook"),
            "avatar": None,
            "token": f"wtoken-{wid}",
            "application_id": str(APP_ID),
            "user": USERS[BOT_ID],
        }
        self.webhooks[wid] = hook
        return await self._done(call, _json(hook))

    async def _post_webhook(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        wid, token = request.match_info["wid"], request.match_info["token"]
        body = call.body or {}
        if wid == str(APP_ID):  # an interaction's follow-up
            mid = self._interaction_messages.get(token)
            channel = self.messages[mid]["channel_id"] if mid else str(CHANNEL_ID)
            message = self._message(channel, USERS[BOT_ID], body.get("content") or "", body=body)
            self.messages[message["id"]] = message
            call.message_id = message["id"]
            return await self._done(call, _json(message))
        hook = self.webhooks.get(wid)
        if hook is None or hook["token"] != token:
            return await self._done(call, _json({"message": "Unknown Webhook", "code": 10015}, 404))
        channel = request.query.get("thread_id") or hook["channel_id"]
        author = user_obj(int(wid), body.get("username") or hook["name"], bot=True)
        message = self._message(
            channel, author, body.get("content") or "", body=body, webhook_id=wid
        )
        message["attachments"] = self._attachments(call)
        return await self._created(call, message)

    async def _patch_webhook(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        wid, token, mid = (request.match_info[k] for k in ("wid", "token", "mid"))
        if mid == "@original":
            mid = self._interaction_messages.get(token, "")
        elif wid != str(APP_ID) and (self.webhooks.get(wid) or {}).get("token") != token:
            return await self._done(call, _json({"message": "Unknown Webhook", "code": 10015}, 404))
        if mid not in self.messages:
            return await self._done(call, _json({"message": "Unknown Message", "code": 10008}, 404))
        return await self._done(call, _json(self._edit(call, mid)))

    async def _callback(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request, label="/interactions/{id}/{token}/callback")
        call.query["interaction_id"] = request.match_info["iid"]
        body = call.body or {}
        response = {
            "interaction": {
                "id": request.match_info["iid"],
                "type": 3,
                "response_message_loading": body.get("type") == 5,
                "response_message_ephemeral": bool((body.get("data") or {}).get("flags", 0) & 64),
            }
        }
        if request.query.get("with_response") in ("1", "true", "True"):
            return await self._done(call, _json(response))
        return await self._done(call, web.Response(status=204))

    async def _unhandled(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request, label=f"UNHANDLED {request.path}")
        return await self._done(call, _json({"message": "404: Not Found (fake)", "code": 0}, 404))

    # -- reading what happened ---------------------------------------------------------------------

    def in_channel(self, channel: str) -> list[dict[str, Any]]:
        """Messages everyone sees in a channel or thread (not ephemeral ones), in order."""
        return [
            m
            for m in self.messages.values()
            if m["channel_id"] == channel and not m.get("flags", 0) & 64
        ]

    def unhandled(self) -> list[Call]:
        return [c for c in self.calls if c.path.startswith("UNHANDLED")]
