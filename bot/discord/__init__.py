"""The Discord adapter (DESIGN §7), declared as platform "discord".

Only the declaration is here; the adapter and its checks load when they are used (bot/adapter.py
says why).
"""

from __future__ import annotations

from bot.adapter import PlatformSetting, PlatformSpec, register

register(
    PlatformSpec(
        "discord",
        factory="bot.discord.factory:make_adapter",
        settings=(
            PlatformSetting("bot_token", "DISCORD_BOT_TOKEN", secret=True),
            PlatformSetting("api_url", "DISCORD_API_URL"),
        ),
        token="bot_token",
        doctor="bot.discord.doctor:discord_checks",
        title="Discord",
        # A user id or a role id, both snowflakes (the shape bot/discord/look.py recognises).
        approver=(r"[0-9]{17,20}", "a Discord user or role id (17 to 20 digits)"),
    )
)
