"""The fake Discord's Gateway: IDENTIFY, RESUME (replaying what the client missed), dispatch.

Sharded as Discord is: IDENTIFY carries `shard: [id, count]` (discord.py always sends it; an id
outside the count is closed with 4010), a session's READY and GUILD_CREATEs cover only the
guilds of its shard, and an event of a guild goes to the session of the guild's shard,
`(guild_id >> 22) % count`, alone (to none when no process holds that shard: Discord keeps no
events for a shard nobody connected); direct messages go to shard 0."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.discord.payloads import (
    APP_ID,
    APPROVER_ROLE,
    BOT_ID,
    BOT_ROLE,
    EVERYONE_PERMISSIONS,
    GUILD_ID,
    MANAGE_WEBHOOKS,
    MESSAGE_CONTENT_INTENT,
    OWNER_ID,
    ROLES_OF,
    USERS,
    member_obj,
    role_obj,
    snowflake,
)


@dataclass
class _Session:
    """One Gateway session: its events survive a dropped socket, for RESUME."""

    session_id: str
    ws: web.WebSocketResponse | None
    shard: tuple[int, int] = (0, 1)  # [id, count], as IDENTIFY gave it
    seq: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class Gateway:
    """The Gateway half of FakeDiscord (its state is set up there)."""

    _sessions: dict[str, _Session]
    _current: _Session | None
    _by_shard: dict[int, _Session]  # the session each shard id's events go to
    dispatched: list[tuple[int, str, Any]]  # (shard id, event, its id) of every guild event
    undelivered: list[tuple[str, Any]]  # guild events no session's shard covered
    guilds: dict[int, str]  # guild id → name
    gateway_ops: list[tuple[str, Any]]
    replayed: list[tuple[int, str, Any]]
    replay_overlap: int
    token: str
    app_flags: int
    webhooks_allowed: bool
    channels: dict[str, dict[str, Any]]

    @property
    def gateway_url(self) -> str:
        raise NotImplementedError

    async def _notify(self) -> None:
        raise NotImplementedError

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
        shard_id, count = (int(n) for n in data.get("shard") or (0, 1))
        self.gateway_ops.append(
            ("identify", {"intents": data.get("intents"), "shard": [shard_id, count]})
        )
        asks_content = int(data.get("intents") or 0) & (1 << 15)
        if asks_content and not self.app_flags & MESSAGE_CONTENT_INTENT:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return None
        if not 0 <= shard_id < count:
            await ws.close(code=4010, message=b"Invalid shard.")
            return None
        session = _Session(f"session-{snowflake()}", ws, (shard_id, count))
        self._sessions[session.session_id] = session
        self._current = self._by_shard[shard_id] = session
        await self._dispatch(session, "READY", self._ready(session))
        for guild_id in self._guilds_of(session):
            await self._dispatch(session, "GUILD_CREATE", self._guild(guild_id))
        await self._notify()
        return session

    def _guilds_of(self, session: _Session) -> list[int]:
        shard_id, count = session.shard
        return [g for g in self.guilds if (g >> 22) % count == shard_id]

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
        self._current = self._by_shard[session.shard[0]] = session
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
        """Push a Gateway event to the session of its guild's shard (kept for a resume when the
        socket is down); an event of no guild (a direct message) to shard 0's, as Discord
        does, else to the latest session."""
        assert self._current is not None, "no Gateway session yet"
        guild = data.get("guild_id")
        if guild is None:
            await self._dispatch(self._by_shard.get(0, self._current), event, data)
            return
        for session in list(self._by_shard.values()):
            shard_id, count = session.shard
            if (int(guild) >> 22) % count == shard_id:
                self.dispatched.append((shard_id, event, data.get("id")))
                await self._dispatch(session, event, data)
                return
        self.undelivered.append((event, data.get("id")))

    @property
    def identified(self) -> bool:
        return self._current is not None

    @property
    def identified_shards(self) -> list[int]:
        """The shard ids some session has identified (or resumed) as."""
        return sorted(self._by_shard)

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
            "guilds": [{"id": str(g), "unavailable": True} for g in self._guilds_of(session)],
            "session_id": session.session_id,
            "resume_gateway_url": self.gateway_url,
            "application": {"id": str(APP_ID), "flags": self.app_flags},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "shard": list(session.shard),
        }

    def _guild(self, guild_id: int = GUILD_ID) -> dict[str, Any]:
        bot_roles = [str(BOT_ROLE)] if self.webhooks_allowed else []
        ours = [c for c in self.channels.values() if c.get("guild_id") == str(guild_id)]
        return {
            "id": str(guild_id),
            "name": self.guilds[guild_id],
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
            "roles": self._roles(guild_id),
            "emojis": [],
            "stickers": [],
            "member_count": 4,
            "large": False,
            "unavailable": False,
            "joined_at": "2024-01-01T00:00:00+00:00",
            "channels": [c for c in ours if c["type"] == 0],
            "threads": [  # active ones only, as Discord does
                c for c in ours if c["type"] == 11 and not c["thread_metadata"]["archived"]
            ],
            "members": [member_obj(BOT_ID, bot_roles)]
            + [member_obj(uid, roles) for uid, roles in ROLES_OF.items()],
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    def _roles(self, guild_id: int = GUILD_ID) -> list[dict[str, Any]]:
        return [
            role_obj(guild_id, "@everyone", EVERYONE_PERMISSIONS, 0),
            role_obj(BOT_ROLE, "tribunal", MANAGE_WEBHOOKS, 1),
            role_obj(APPROVER_ROLE, "approvers", 0, 2),
        ]
