"""How long the store keeps what it only needs for a while, and when the engine prunes it.

Past the retention the store drops inbound event ids (the dedupe of platform retries), outbox
rows that were sent or given up on, and the per-turn usage rows of tasks closed that long ago.
It never drops a pending outbox row or anything of an open task (or of a task closed more
recently than the retention); a task's own token and cost totals stay on its row, so `status`
keeps showing them. The pruning itself is rooms/store/prune.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rooms.base.ports import Clock

DAY_S = 86_400.0
DEFAULT_RETENTION_DAYS = 30  # 0: keep everything forever
MAX_RETENTION_DAYS = 36_500
# Slack retries an event for about half an hour and a Discord gateway resume replays minutes of
# events: an event id younger than a day is kept whatever the setting, so a retry is never taken
# for a new event.
EVENT_MIN_KEEP_S = DAY_S
PRUNE_EVERY_S = 3_600.0  # by the engine's clock, and once at start
PRUNE_BATCH = 5_000  # rows per table per transaction: the store's lock is never held for long


@dataclass(frozen=True)
class Pruned:
    """How many rows of each kind one prune removed."""

    events: int = 0
    outbox: int = 0
    usage: int = 0

    def __add__(self, other: Pruned) -> Pruned:
        return Pruned(
            self.events + other.events, self.outbox + other.outbox, self.usage + other.usage
        )

    @property
    def total(self) -> int:
        return self.events + self.outbox + self.usage


def check_retention_days(days: int) -> int:
    if isinstance(days, bool) or not isinstance(days, int):
        raise ValueError(f"retention_days must be a whole number of days (got {days!r})")
    if not 0 <= days <= MAX_RETENTION_DAYS:
        raise ValueError(
            f"retention_days must be 0 (keep forever) to {MAX_RETENTION_DAYS} (got {days})"
        )
    return days


class Prunable(Protocol):
    """What the schedule needs of the store (`Store.prune`): this module is the store's own
    vocabulary, so it names no `Store` (that would be an import circle)."""

    async def prune(self, now: float, keep_s: float) -> Pruned: ...


class Pruner:
    """The engine's schedule: the first `maybe` prunes, then one every PRUNE_EVERY_S of
    `clock` (an injected clock in tests); nothing at all when the retention is 0 days."""

    def __init__(self, store: Prunable, clock: Clock, retention_days: int) -> None:
        self.store = store
        self.clock = clock
        self.retention_days = check_retention_days(retention_days)
        self._due: float | None = None

    async def maybe(self) -> Pruned | None:
        """Prune if it is time; None when it was not (or the retention is forever)."""
        if self.retention_days == 0:
            return None
        now = self.clock.now()
        if self._due is not None and now < self._due:
            return None
        self._due = now + PRUNE_EVERY_S
        return await self.store.prune(now, self.retention_days * DAY_S)
