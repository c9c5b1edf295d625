"""Delivering the outbox (DESIGN §7): every message the engine posts goes through here.

Rows are posted in id order per room; a row that fails holds back the rows after it in its room
(so a room never reads an answer before its question) and is retried with exponential backoff
(`first_backoff_s` doubling per attempt up to `max_backoff_s`). Each pass looks only at the
oldest pending row of every room, again and again while rows go out, so a room with many rows
stuck behind a failing one never keeps the other rooms' posts waiting.
Delivery is at-least-once: a row is marked sent only after the platform took it, so a crash in
between hands it again after a restart, with the same `outbox_id` for the platform to recognise
(and, from the second attempt, `after`: the room's last delivered message, where a platform that
reads its thread back starts looking).
A sent row is never handed again. Each row is claimed before delivery, so two engines on one
database do not post it both. A round is one round trip to the store (rooms/store/outbox.py
`outbox_round`): it marks sent what the last round posted and claims the next head rows, so a
post costs a share of one trip, not a read, a claim and a mark of its own. After `max_attempts`
failures a row is set aside as dead (kept, with its last error) instead of blocking its room for
ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace

from rooms.base.model import Outbound
from rooms.base.records import OutboxRow
from rooms.core.context import Ctx

log = logging.getLogger(__name__)
MAX_ROUNDS = 1000  # head-of-room rounds in one pass before the loop yields


class Deliverer:
    def __init__(
        self,
        ctx: Ctx,
        *,
        max_attempts: int = 12,
        first_backoff_s: float = 0.2,
        max_backoff_s: float = 30.0,
        poll_s: float = 1.0,
    ) -> None:
        self.ctx = ctx
        self.max_attempts = max_attempts
        self.first_backoff_s = first_backoff_s
        self.max_backoff_s = max_backoff_s
        self.poll_s = poll_s  # also picks up rows other processes enqueued
        # The room platforms this process serves (Engine sets it); None: all. The rows of other
        # platforms are left, untouched, to the process that serves them.
        self.platforms: frozenset[str] | None = None
        self._wake = asyncio.Event()
        self._pass = asyncio.Lock()  # one delivery pass at a time in this process
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._loop(), name="tribunal-outbox")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def wake(self) -> None:
        self._wake.set()

    async def flush(self) -> None:
        """Deliver until no row is pending (dead rows do not count)."""
        while True:
            wait = await self.deliver_due()
            if await self.ctx.store.count_pending(platforms=self.platforms) == 0:
                return
            await asyncio.sleep(min(wait, 0.05))

    async def _loop(self) -> None:
        while True:
            self._wake.clear()  # before the pass: a wake during it triggers another pass
            try:
                wait = await self.deliver_due()
            except Exception:
                log.exception("outbox delivery pass failed")
                wait = self.poll_s
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wake.wait()

    async def deliver_due(self) -> float:
        """One pass over the pending rows. Returns how long until the next one may be due."""
        async with self._pass:
            sent: list[tuple[int, str | None, float]] = []  # posted, to be marked sent
            try:
                return await self._rounds(sent)
            finally:
                if sent:  # the last round's posts (also when the pass failed or was cancelled)
                    await asyncio.shield(self.ctx.store.mark_sent_all(sent))

    async def _rounds(self, sent: list[tuple[int, str | None, float]]) -> float:
        wait = self.poll_s
        for _ in range(MAX_ROUNDS):
            now = self.ctx.wall()
            rows, later = await self.ctx.store.outbox_round(
                self.ctx.engine_id, now, self.ctx.lease_s, sent=sent, platforms=self.platforms
            )
            sent.clear()  # marked in that same transaction
            if later is not None:
                wait = min(wait, later - now)
            moved = False  # a room's head row went out (or was set aside): its next is due
            for row in rows:  # claimed: due, and no other engine is delivering it
                retry_in = await self._deliver(row, sent)
                if retry_in is None:
                    moved = True
                else:
                    wait = min(wait, retry_in)
            if not moved:
                return max(wait, 0.0)
        return 0.0  # more to post: the loop comes straight back

    async def _deliver(
        self, row: OutboxRow, sent: list[tuple[int, str | None, float]]
    ) -> float | None:
        """Hand one row to the platform; once it took it, the row goes into `sent` (marked
        with the next round trip). Returns the backoff when it must be retried."""
        message = Outbound(
            room=row.room,
            text=row.text,
            persona=row.persona,
            actions=row.actions,
            outbox_id=row.id,
            card=row.card,
            private_to=row.private_to,
            in_reply_to=row.in_reply_to,
            attempt=row.attempts + 1,  # `row` was read before its claim counted this one
        )
        if message.attempt > 1:  # it may be there already: say where to start looking
            after = await self.ctx.store.last_sent_before(row.room.key, row.id)
            message = replace(message, after=after)
        try:
            message_id = await self.ctx.platform.deliver(message)
        except Exception as exc:
            attempts = row.attempts + 1
            give_up = attempts >= self.max_attempts
            backoff = min(self.first_backoff_s * 2 ** (attempts - 1), self.max_backoff_s)
            error = f"{type(exc).__name__}: {exc}"
            log.warning("delivery of outbox row %s failed (%s): %s", row.id, attempts, error)
            await self.ctx.store.mark_failed(
                row.id, error, self.ctx.wall() + backoff, give_up=give_up
            )
            return None if give_up else backoff
        sent.append((row.id, message_id, self.ctx.wall()))
        return None
