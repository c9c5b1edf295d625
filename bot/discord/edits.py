"""Edits in place at Discord's pace: at most one edit of a message per interval.

A progress message is edited each time an agent reports a step (rooms/core/progress.py already
sends at most about one a second, and its closing edit right after the last one). Discord
limits edits per channel, and per webhook across all the threads of a channel, so edits here
are coalesced per message: the first goes at once; one that comes within the interval waits
for it, replacing any edit still waiting, so the latest text wins and is never lost. Progress
edits (no outbox id) do not hold up the agent: they return at once and go later, best effort.
An edit from the outbox, and a progress message's final edit (`Outbound.final`), waits its
turn and raises on failure, so the outbox (or the engine's next start) tries it again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot import flushers
from rooms.base.model import Outbound

log = logging.getLogger(__name__)
EDIT_INTERVAL_S = 1.0
_FORGET_AFTER = 1000  # paces kept before the quiet ones are dropped

Send = Callable[[Outbound], Awaitable[None]]


@dataclass
class _Pace:
    last_at: float | None = None
    pending: Outbound | None = None
    flusher: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class EditPacer:
    def __init__(
        self,
        send: Send,
        *,
        interval: float = EDIT_INTERVAL_S,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send = send
        self._interval = interval
        self._now = now
        self._paces: dict[str, _Pace] = {}
        self.sent = 0  # edits that went out (tests, benchmarks)

    def posted(self, message_id: str) -> None:
        """A message was just posted: its first edit waits for the interval like any other."""
        self._paces[message_id] = _Pace(last_at=self._now())

    async def edit(self, message: Outbound) -> None:
        assert message.edit_of is not None
        if len(self._paces) > _FORGET_AFTER:
            self._forget_quiet()
        pace = self._paces.setdefault(message.edit_of, _Pace())
        if not message.outbox_id and not message.final:
            wait = self._wait(pace)
            if wait <= 0 and pace.flusher is None and not pace.lock.locked():
                await self._go(pace, message, raise_errors=False)
                return
            pace.pending = message
            if pace.flusher is None:
                pace.flusher = asyncio.create_task(self._flush_later(pace))
            return
        async with pace.lock:
            pace.pending = None  # superseded by this one
            wait = self._wait(pace)
            if wait > 0:
                await asyncio.sleep(wait)
            await self._go(pace, message, raise_errors=True)

    def _wait(self, pace: _Pace) -> float:
        return 0.0 if pace.last_at is None else pace.last_at + self._interval - self._now()

    async def _flush_later(self, pace: _Pace) -> None:
        try:
            # Sleep outside the lock, so an outbox edit that comes meanwhile goes first and
            # supersedes the waiting one; then wait out what that edit started.
            wait = self._wait(pace)
            if wait > 0:
                await asyncio.sleep(wait)
            async with pace.lock:
                wait = self._wait(pace)
                if wait > 0:
                    await asyncio.sleep(wait)
                message, pace.pending = pace.pending, None
                if message is not None:
                    await self._go(pace, message, raise_errors=False)
        finally:
            pace.flusher = None

    async def _go(self, pace: _Pace, message: Outbound, *, raise_errors: bool) -> None:
        pace.last_at = self._now()
        try:
            await self._send(message)
            self.sent += 1
        except Exception as exc:
            if raise_errors:
                raise
            log.warning("discord: progress edit of %s failed: %s", message.edit_of, exc)

    def _forget_quiet(self) -> None:
        now = self._now()
        for key, pace in list(self._paces.items()):
            quiet = pace.last_at is None or now - pace.last_at > self._interval
            if quiet and pace.flusher is None and not pace.lock.locked():
                del self._paces[key]

    async def drain(self) -> None:
        """Wait until every edit waiting now has been sent."""
        await flushers.drain(self._flushers)

    def _flushers(self) -> list[asyncio.Task[None]]:
        return [p.flusher for p in self._paces.values() if p.flusher is not None]

    async def close(self) -> None:
        await flushers.cancel(self._flushers())
