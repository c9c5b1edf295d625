"""Imports every platform module so that each registers its adapter factory (bot/adapter.py).

A new platform is one package under `bot/` that calls `bot.adapter.register(...)` when imported,
and one import line here. `tribunal serve` starts every adapter whose factory returns one.
"""

from __future__ import annotations

import bot.adapter
import bot.console  # noqa: F401  (registers "console")
import bot.discord  # noqa: F401  (registers "discord")
import bot.slack  # noqa: F401  (registers "slack")

__all__ = ["registered"]

registered = bot.adapter.registered
