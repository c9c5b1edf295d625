"""The fake Discord's vocabulary: ids, the objects it sends (users, members, roles, channels,
messages), and how it answers and records REST calls."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

API = "/api/v10"
TOKEN = "fake-discord-token"
BOT_ID = 1100000000000000001
APP_ID = BOT_ID
OWNER_ID = 1100000000000000002
ALICE = 1100000000000000003  # an approver by user id
BOB = 1100000000000000004  # not an approver
CAROL = 1100000000000000005  # an approver by role
OTHER_BOT = 1100000000000000006  # another bot in the server
GUILD_ID = 1200000000000000001  # on shard 1 of 2: (GUILD_ID >> 22) % 2
SECOND_GUILD_ID = 1200000000004194306  # on shard 0 of 2 (FakeDiscord.add_guild)
CHANNEL_ID = 1300000000000000001  # the registered channel
OTHER_CHANNEL_ID = 1300000000000000002  # a channel of no group
SECOND_CHANNEL_ID = 1300000000000000003  # a text channel of SECOND_GUILD_ID, when added
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


def text_channel_obj(cid: int, name: str, guild: int = GUILD_ID) -> dict[str, Any]:
    return {
        "id": str(cid),
        "type": 0,
        "guild_id": str(guild),
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
