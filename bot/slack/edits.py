"""Edits in place, coalesced to Slack's pace: about one `chat.update` per second per message.

A progress message is edited every time an agent reports a step; an agent that reports 200
steps in two seconds must not cost 200 calls (and a rate limit). Progress edits (no outbox id:
best effort; not the last one, `Outbound.final`, which goes like an outbox edit) are
coalesced: the first goes at once, later ones within the interval replace each
other, and the latest is sent when the interval is over. An edit from the outbox (a decided
card) is never dropped: it waits for the interval and then goes, replacing any progress edit of
the same message still waiting.

The clock is injected (`now` and `sleep`), so tests drive time by hand and never sleep.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from bot import flushers
from rooms.base.model import Outbound

log = logging.getLogger(__name__)
EDIT_INTERVAL_S = 1.0
_FORGET_AFTER = 1000  # messages with a pace kept before the quiet ones are forgotten


class PacingClock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


Send = Callable[[Outbound], Awaitable[None]]


@dataclass
class _Pace:
    last_at: float | None = None  # when the last update of this message went out
    pending: Outbound | None = None  # the latest progress edit not sent yet
    flusher: asyncio.Task[None] | None = None


class EditPacer:
    """Sends edits of one message at most once per `interval`, the latest text winning."""

    def __init__(
        self, send: Send, clock: PacingClock | None = None, interval: float = EDIT_INTERVAL_S
    ) -> None:
        self._send = send
        self._clock = clock or MonotonicClock()
        self._interval = interval
        self._paces: dict[tuple[str, str], _Pace] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    def posted(self, channel: str, ts: str) -> None:
        """A message was just posted: its first edit waits for the interval like any other."""
        self._paces[(channel, ts)] = _Pace(last_at=self._clock.now())

    async def edit(self, message: Outbound) -> None:
        assert message.edit_of is not None
        key = (message.room.channel, message.edit_of)
        if len(self._paces) > _FORGET_AFTER:
            self._forget_quiet()
        pace = self._paces.setdefault(key, _Pace())
        if not message.outbox_id and not message.final:  # progress: best effort, coalesced
            wait = self._wait(pace)
            if wait <= 0 and pace.flusher is None:
                await self._go(key, pace, message)
                return
            pace.pending = message
            if pace.flusher is None:
                pace.flusher = asyncio.create_task(self._flush_later(key, pace, wait))
            return
        # From the outbox: never dropped; it supersedes a waiting progress edit of the message.
        async with self._lock(key):
            pace.pending = None
            wait = self._wait(pace)
            if wait > 0:
                await self._clock.sleep(wait)
            await self._go(key, pace, message, raise_errors=True)

    def _wait(self, pace: _Pace) -> float:
        if pace.last_at is None:
            return 0.0
        return pace.last_at + self._interval - self._clock.now()

    def _forget_quiet(self) -> None:
        """Drop the pace of messages not edited for a while: memory stays bounded."""
        now = self._clock.now()
        for key, pace in list(self._paces.items()):
            quiet = pace.last_at is None or now - pace.last_at > self._interval
            if quiet and pace.flusher is None and pace.pending is None:
                del self._paces[key]
                self._locks.pop(key, None)

    def _lock(self, key: tuple[str, str]) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def _flush_later(self, key: tuple[str, str], pace: _Pace, wait: float) -> None:
        try:
            if wait > 0:
                await self._clock.sleep(wait)
            async with self._lock(key):
                message, pace.pending = pace.pending, None
                if message is not None:
                    await self._go(key, pace, message)
        finally:
            pace.flusher = None

    async def _go(
        self, key: tuple[str, str], pace: _Pace, message: Outbound, *, raise_errors: bool = False
    ) -> None:
        pace.last_at = self._clock.now()
        try:
            await self._send(message)
        except Exception as exc:
            if raise_errors:
                raise
            log.warning("progress edit of %s failed: %s", key, exc)

    async def close(self) -> None:
        """Cancel waiting edits (progress is best effort; the outbox re-sends its own)."""
        await flushers.cancel(self._flushers())

    async def drain(self) -> None:
        """Wait until every coalesced edit waiting now has been sent (tests, shutdown)."""
        await flushers.drain(self._flushers)

    def _flushers(self) -> list[asyncio.Task[None]]:
        return [p.flusher for p in self._paces.values() if p.flusher is not None]
