"""Imports every platform package so that each declares itself (bot/adapter.py PlatformSpec).

A new platform is one package under `bot/` whose `__init__` calls `bot.adapter.register(...)`
with its `PlatformSpec`, and one import line here. The settings (its section and variables), the
doctor, the runners' environment filter and the reference-key check read the declarations;
`tribunal serve` starts every adapter whose factory returns one.
"""

from __future__ import annotations

import bot.adapter

# The order here is the order the platforms are declared: `serve` starts them, the settings and
# `tribunal doctor` list them in it.
# isort: off
import bot.console  # noqa: F401  (declares "console")
import bot.slack  # noqa: F401  (declares "slack")
import bot.discord  # noqa: F401  (declares "discord")
# isort: on

bot.adapter.all_declared()

__all__ = ["registered"]

registered = bot.adapter.registered
