"""The Discord adapter (DESIGN §7), declared as platform "discord".

Only the declaration is here; the adapter and its checks load when they are used (bot/adapter.py
says why).
"""

from __future__ import annotations

from bot.adapter import PlatformSetting, PlatformSpec, register
from bot.discord.shards import ShardIds, ShardNumber

register(
    PlatformSpec(
        "discord",
        factory="bot.discord.factory:make_adapter",
        settings=(
            PlatformSetting("bot_token", "DISCORD_BOT_TOKEN", secret=True),
            PlatformSetting("api_url", "DISCORD_API_URL"),
            # Several processes for one bot: each connects its own shards (bot/discord/shards.py).
            PlatformSetting("shard_count", "DISCORD_SHARD_COUNT", value=ShardNumber),
            PlatformSetting("shard_ids", "DISCORD_SHARD_IDS", value=ShardIds),
        ),
        token="bot_token",
        doctor="bot.discord.doctor:discord_checks",
        check="bot.discord.shards:shard_problems",
        title="Discord",
        # A user id or a role id, both snowflakes (the shape bot/discord/look.py recognises).
        approver=(r"[0-9]{17,20}", "a Discord user or role id (17 to 20 digits)"),
    )
)
