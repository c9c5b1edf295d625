"""Imports every platform module so that each registers its adapter factory (bot/adapter.py).

A new platform is one package under `bot/` that calls `bot.adapter.register(...)` when imported,
and one import line here.
"""

from __future__ import annotations

import bot.adapter

__all__ = ["registered"]

registered = bot.adapter.registered
