"""The discord.py client of the adapter: intents, persistent buttons, and where it connects.

An `AutoShardedClient`, because it asks `GET /gateway/bot` for the Gateway's address: with
`DISCORD_API_URL` set, REST and the Gateway then both come from there (a plain `Client` dials a
hard-coded Gateway address). Given a shard count (several processes for one bot, each with its
own shards: bot/discord/shards.py), discord.py would dial that hard-coded address too, so
`launch_shards` asks `GET /gateway/bot` for the address in every case and keeps the configured
count. The message-content intent is on: the tribunal reads the thread's discussion, not only
mentions. Mentions in our posts never ping (`AllowedMentions.none()`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import discord
import discord.http
import yarl

from bot.discord.buttons import DecisionButton, OnClick, UnknownButton

OnMessage = Callable[[discord.Message], Awaitable[None]]
MAX_RATELIMIT_WAIT_S = 30.0  # discord.py's smallest allowed bound; longer waits raise


def intents() -> discord.Intents:
    wanted = discord.Intents.default()
    wanted.message_content = True
    return wanted


class TribunalClient(discord.AutoShardedClient):
    def __init__(
        self,
        *,
        on_message: OnMessage,
        on_click: OnClick,
        max_ratelimit_timeout: float = MAX_RATELIMIT_WAIT_S,
        guild_ready_timeout: float = 2.0,
        shard_count: int | None = None,
        shard_ids: tuple[int, ...] | None = None,
        **options: Any,
    ) -> None:
        if shard_count is not None:
            options["shard_count"] = shard_count
        if shard_ids is not None:
            options["shard_ids"] = list(shard_ids)
        super().__init__(
            intents=intents(),
            max_ratelimit_timeout=max_ratelimit_timeout,
            guild_ready_timeout=guild_ready_timeout,
            allowed_mentions=discord.AllowedMentions.none(),
            **options,
        )
        self._handle_message = on_message
        self.on_click = on_click  # read by DecisionButton.callback

    async def setup_hook(self) -> None:
        self.add_dynamic_items(DecisionButton, UnknownButton)

    async def on_message(self, message: discord.Message) -> None:
        await self._handle_message(message)

    async def launch_shards(self) -> None:
        """discord.py's, but the Gateway's address always from `GET /gateway/bot` (discord.py
        takes its hard-coded address when the shard count is given), and the count Discord
        recommends only when none is configured. Each shard IDENTIFYs with [id, count]."""
        if self.is_closed():
            return
        recommended, url, _limits = await self.http.get_bot_gateway()
        if self.shard_count is None:
            self.shard_count = recommended
        gateway = yarl.URL(url)
        self._connection.shard_count = self.shard_count
        shard_ids = self.shard_ids or list(range(self.shard_count))
        self._connection.shard_ids = shard_ids
        for shard_id in shard_ids:
            await self.launch_shard(gateway, shard_id, initial=shard_id == shard_ids[0])


def describe_connected(client: discord.AutoShardedClient) -> str:
    """The shards a connected client holds, as a log line says it: "shards 0, 2 of 4"."""
    ids = sorted(client.shards)
    owned = ", ".join(str(i) for i in ids)
    return f"shard{'s' if len(ids) > 1 else ''} {owned} of {client.shard_count}"


@contextlib.contextmanager
def api_base(api_url: str | None) -> Iterator[None]:
    """REST (and so the Gateway address) from `api_url` while inside; discord.py keeps the base
    as a class attribute, so it is restored on the way out."""
    if not api_url:
        yield
        return
    saved = discord.http.Route.BASE
    discord.http.Route.BASE = api_url.rstrip("/")
    try:
        yield
    finally:
        discord.http.Route.BASE = saved
