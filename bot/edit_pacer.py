"""Edits in place at a chat platform's pace: at most one edit of a message per interval, the
latest text winning. Both platforms use it (bot/slack/adapter.py: about one `chat.update` per
second per message; bot/discord/adapter.py: Discord limits edits per channel, and per webhook
across all the threads of a channel).

A progress message is edited each time an agent reports a step; an agent that reports 200 steps
in two seconds must not cost 200 calls (and a rate limit). So edits are coalesced per message:

- a progress edit (no outbox id, not the last one) is best effort and never holds up the agent:
  the first goes at once; later ones within the interval replace each other, and the latest is
  sent when the interval is over; a failure is logged, not raised;
- an edit from the outbox (a decided card) and a progress message's final edit
  (`Outbound.final`) are never dropped or coalesced away: each waits its turn, replaces any
  progress edit of the same message still waiting, and raises on failure, so the outbox (or the
  engine's next start) tries it again. Cancelling the waiting edits (`close`, as a stop does)
  cancels only best-effort ones.

A message is named by its channel and its platform id. The clock (`now` and `sleep`) is
injected, so tests drive time by hand and never sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from rooms.base.model import Outbound

log = logging.getLogger(__name__)
EDIT_INTERVAL_S = 1.0
_FORGET_AFTER = 1000  # messages with a pace kept before the quiet ones are forgotten

Send = Callable[[Outbound], Awaitable[None]]
_Key = tuple[str, str]  # (channel, message id)


class PacingClock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass
class _Pace:
    last_at: float | None = None  # when the last edit of this message went out
    pending: Outbound | None = None  # the latest progress edit not sent yet
    flusher: asyncio.Task[None] | None = None  # sends `pending` when the interval is over
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one edit of the message at a time


class EditPacer:
    """Sends edits of one message at most once per `interval`, the latest text winning."""

    def __init__(
        self, send: Send, clock: PacingClock | None = None, interval: float = EDIT_INTERVAL_S
    ) -> None:
        self._send = send
        self._clock = clock or MonotonicClock()
        self._interval = interval
        self._paces: dict[_Key, _Pace] = {}
        self.sent = 0  # edits that went out (tests, benchmarks)

    def posted(self, channel: str, message_id: str) -> None:
        """A message was just posted: its first edit waits for the interval like any other."""
        self._paces[(channel, message_id)] = _Pace(last_at=self._clock.now())

    async def edit(self, message: Outbound) -> None:
        assert message.edit_of is not None
        key = (message.room.channel, message.edit_of)
        if len(self._paces) > _FORGET_AFTER:
            self._forget_quiet()
        pace = self._paces.setdefault(key, _Pace())
        if not message.outbox_id and not message.final:  # progress: best effort, coalesced
            if self._wait(pace) <= 0 and pace.flusher is None and not pace.lock.locked():
                await self._go(key, pace, message, raise_errors=False)
                return
            pace.pending = message
            if pace.flusher is None:
                pace.flusher = asyncio.create_task(self._flush_later(key, pace))
            return
        async with pace.lock:
            pace.pending = None  # superseded by this one
            await self._wait_out(pace)
            await self._go(key, pace, message, raise_errors=True)

    def _wait(self, pace: _Pace) -> float:
        return 0.0 if pace.last_at is None else pace.last_at + self._interval - self._clock.now()

    async def _wait_out(self, pace: _Pace) -> None:
        wait = self._wait(pace)
        if wait > 0:
            await self._clock.sleep(wait)

    async def _flush_later(self, key: _Key, pace: _Pace) -> None:
        try:
            # Sleep outside the lock, so an outbox or final edit that comes meanwhile goes first
            # and supersedes the waiting one; then wait out what that edit started.
            await self._wait_out(pace)
            async with pace.lock:
                if pace.pending is not None:
                    await self._wait_out(pace)
                message, pace.pending = pace.pending, None
                if message is not None:
                    await self._go(key, pace, message, raise_errors=False)
        finally:
            pace.flusher = None

    async def _go(self, key: _Key, pace: _Pace, message: Outbound, *, raise_errors: bool) -> None:
        pace.last_at = self._clock.now()
        try:
            await self._send(message)
            self.sent += 1
        except Exception as exc:
            if raise_errors:
                raise
            log.warning("%s: progress edit of %s failed: %s", message.room.platform, key, exc)

    def _forget_quiet(self) -> None:
        """Drop the pace of messages not edited for a while: memory stays bounded."""
        now = self._clock.now()
        for key, pace in list(self._paces.items()):
            quiet = pace.last_at is None or now - pace.last_at > self._interval
            if quiet and pace.flusher is None and pace.pending is None and not pace.lock.locked():
                del self._paces[key]

    def _flushers(self) -> list[asyncio.Task[None]]:
        return [p.flusher for p in self._paces.values() if p.flusher is not None]

    async def drain(self) -> None:
        """Wait until every coalesced edit waiting now has been sent (tests, shutdown); a flush
        may schedule the next (the latest text of a burst)."""
        while flushers := self._flushers():
            await asyncio.gather(*flushers, return_exceptions=True)

    async def close(self) -> None:
        """Cancel the waiting progress edits and wait until each has stopped (progress is best
        effort; the outbox re-sends its own, and a final edit is not among them)."""
        flushers = self._flushers()
        for flusher in flushers:
            flusher.cancel()
        for flusher in flushers:
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
