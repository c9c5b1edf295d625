"""Settings → the Discord adapter: with `DISCORD_BOT_TOKEN` set, serving every group whose
`platform = "discord"`; REST and the Gateway from `DISCORD_API_URL` when it is set."""

from __future__ import annotations

from bot.discord.adapter import DiscordAdapter
from bot.discord.shards import shards_of
from bot.settings import Settings

# How long discord.py waits after the last GUILD_CREATE before it calls itself ready.
GUILD_READY_S = 2.0


def registered_channels(settings: Settings) -> frozenset[str]:
    return frozenset(
        channel for _, platform, channel, _ in settings.all_groups() if platform == "discord"
    )


def make_adapter(settings: Settings) -> DiscordAdapter | None:
    token = settings.platform_value("discord", "bot_token")
    if token is None:
        return None
    return DiscordAdapter(
        token,
        channels=registered_channels(settings),
        api_url=settings.platform_value("discord", "api_url"),
        guild_ready_timeout=GUILD_READY_S,
        shards=shards_of(settings),
    )
