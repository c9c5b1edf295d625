"""FakeDiscord: one aiohttp server with the REST API and the Gateway (see the package doc)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from tests.fakes.discord.gateway import Gateway, _Session
from tests.fakes.discord.payloads import (
    API,
    APP_ID,
    BOT_ID,
    CHANNEL_ID,
    EVERYONE_PERMISSIONS,
    GUILD_ID,
    MESSAGE_CONTENT_INTENT,
    OTHER_CHANNEL_ID,
    ROLES_OF,
    TOKEN,
    USERS,
    Call,
    member_obj,
    snowflake,
    text_channel_obj,
)
from tests.fakes.discord.rest import Rest


class FakeDiscord(Gateway, Rest):
    def __init__(
        self,
        *,
        webhooks_allowed: bool = True,
        app_flags: int = MESSAGE_CONTENT_INTENT,
        shards: int = 1,
    ):
        self.shard_count = shards  # what GET /gateway/bot recommends
        self.guilds: dict[int, str] = {GUILD_ID: "Fake Guild"}
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
        self.webhooks_full = False  # the channel has its 15 webhooks (none of them ours)
        self.threads_allowed = True  # the bot's Create Public Threads
        self.echo = True  # MESSAGE_CREATE for messages the bot and its webhooks post
        # Called with each message a webhook posted, right after Discord stored it and before
        # the answer goes back (the crash test kills the bot there).
        self.on_webhook_post: Callable[[dict[str, Any]], None] | None = None
        self._rate_limits: list[tuple[Callable[[str, str], bool], float]] = []
        self._sessions: dict[str, _Session] = {}
        self._current: _Session | None = None
        self._by_shard: dict[int, _Session] = {}
        self.dispatched: list[tuple[int, str, Any]] = []
        self.undelivered: list[tuple[str, Any]] = []
        self._interaction_messages: dict[str, str] = {}  # interaction token → message id
        self._nonces: dict[tuple[str, str], str] = {}  # (channel, enforced nonce) → message id
        self.deleted: list[dict[str, Any]] = []  # messages deleted (by the bot or its webhooks)
        self.dms: dict[str, str] = {}  # user id → the id of the bot's DM channel with them
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
        r.add_get(API + "/channels/{cid}/messages", self._get_messages)
        r.add_patch(API + "/channels/{cid}/messages/{mid}", self._patch_message)
        r.add_delete(API + "/channels/{cid}/messages/{mid}", self._delete_message)
        r.add_delete(API + "/webhooks/{wid}/{token}/messages/{mid}", self._delete_message)
        r.add_post(API + "/channels/{cid}/messages/{mid}/threads", self._post_thread)
        r.add_get(API + "/channels/{cid}/webhooks", self._get_webhooks)
        r.add_post(API + "/channels/{cid}/webhooks", self._post_webhooks)
        r.add_post(API + "/webhooks/{wid}/{token}", self._post_webhook)
        r.add_patch(API + "/webhooks/{wid}/{token}/messages/{mid}", self._patch_webhook)
        r.add_post(API + "/interactions/{iid}/{token}/callback", self._callback)
        r.add_post(API + "/users/@me/channels", self._open_dm)
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

    def add_guild(self, guild_id: int, channel_id: int, name: str = "Second Guild") -> None:
        """Another server with the bot in it, and a text channel there (before `start`'s
        clients connect: its GUILD_CREATE goes out at IDENTIFY)."""
        self.guilds[guild_id] = name
        self.channels[str(channel_id)] = text_channel_obj(channel_id, "tribunal", guild_id)

    # -- what people do ----------------------------------------------------------------------------

    async def say(
        self,
        uid: int,
        text: str,
        *,
        channel: int | str = CHANNEL_ID,
        mention: bool = False,
        mid: str | None = None,
        mentions: tuple[int, ...] = (),
    ) -> dict[str, Any]:
        """A person's message (MESSAGE_CREATE); `mention` puts the bot's mention first;
        `mentions`: the users the text mentions (`<@id>` in it) beside the bot."""
        content = f"<@{BOT_ID}> {text}" if mention else text
        message = self._message(str(channel), USERS[uid], content, mid=mid)
        message["mentions"] = ([USERS[BOT_ID]] if mention else []) + [USERS[u] for u in mentions]
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
        guild = str(self.guild_of(message["channel_id"]))
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
                "guild_id": guild,
                "guild": {"id": guild, "locale": "en-US", "features": []},
                "guild_locale": "en-US",
                "channel_id": message["channel_id"],
                "channel": channel,
                "member": member,
                "message": message,
                "data": {"custom_id": custom_id, "component_type": 2},
                "locale": "en-US",
                "app_permissions": str(EVERYONE_PERMISSIONS),
                "entitlements": [],
                "authorizing_integration_owners": {"0": guild},
                "context": 0,
            },
        )
        return iid

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
