"""The discord.py client of the adapter: intents, persistent buttons, and where it connects.

An `AutoShardedClient`, because it asks `GET /gateway/bot` for the Gateway's address: with
`DISCORD_API_URL` set, REST and the Gateway then both come from there (a plain `Client` dials a
hard-coded Gateway address). The message-content intent is on: the tribunal reads the thread's
discussion, not only mentions. Mentions in our posts never ping (`AllowedMentions.none()`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import discord
import discord.http

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
        **options: Any,
    ) -> None:
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
