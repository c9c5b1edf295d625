"""The Discord adapter (DESIGN §7), registered as platform "discord"."""

from __future__ import annotations

from bot.adapter import register
from bot.discord.adapter import DiscordAdapter
from bot.discord.factory import make_adapter
from bot.discord.inbound import PLATFORM

register(PLATFORM, make_adapter)

__all__ = ["DiscordAdapter", "make_adapter"]
