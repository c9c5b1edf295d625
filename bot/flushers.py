"""Waiting for and cancelling the flush tasks of an edit pacer (bot/slack/edits.py and
bot/discord/edits.py coalesce edits in their own way; they end them the same way)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable


async def drain(waiting: Callable[[], list[asyncio.Task[None]]]) -> None:
    """Until `waiting()` is empty: a flush may schedule the next (the latest text of a burst)."""
    while flushers := waiting():
        await asyncio.gather(*flushers, return_exceptions=True)


async def cancel(flushers: list[asyncio.Task[None]]) -> None:
    """Cancel the flushes and wait until each has stopped (progress edits are best effort)."""
    for flusher in flushers:
        flusher.cancel()
    for flusher in flushers:
        with contextlib.suppress(asyncio.CancelledError):
            await flusher
