"""The store's part of retention (rooms/store/retention.py): delete, in bounded batches, what is
older than the retention and can never be needed again."""

from __future__ import annotations

import sqlite3

from rooms.store.connection import StoreBase
from rooms.store.retention import EVENT_MIN_KEEP_S, PRUNE_BATCH, Pruned

# Rows of a task are pruned only once the task has been closed for longer than the retention
# (never of an open task: it may still read or re-enqueue them). Outbox rows of no task (status
# replies, refusals) go by their own age. The outbox row with the highest id always stays, so
# SQLite never hands its id to a new row: platforms may deduplicate posts by outbox id.
_OLD_TASKS = "SELECT id FROM tasks WHERE status='closed' AND closed_at < :cutoff"
_PRUNE_EVENTS = (
    "DELETE FROM events WHERE event_id IN"
    " (SELECT event_id FROM events WHERE at < :event_cutoff LIMIT :batch)"
)
_PRUNE_OUTBOX = (
    "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox"
    " WHERE status IN ('sent','dead')"
    " AND created_at < :cutoff AND next_try_at < :cutoff AND COALESCE(sent_at, 0) < :cutoff"
    f" AND (task_id IS NULL OR task_id IN ({_OLD_TASKS}))"
    " AND id < (SELECT MAX(id) FROM outbox) LIMIT :batch)"
)
_PRUNE_USAGE = (
    "DELETE FROM usage WHERE id IN"
    f" (SELECT id FROM usage WHERE task_id IN ({_OLD_TASKS}) LIMIT :batch)"
)


def prune_batch(db: sqlite3.Connection, now: float, keep_s: float, batch: int) -> Pruned:
    """Up to `batch` rows of each kind older than `keep_s` seconds before `now`."""
    args = {
        "cutoff": now - keep_s,
        "event_cutoff": now - max(keep_s, EVENT_MIN_KEEP_S),
        "batch": batch,
    }
    return Pruned(
        events=db.execute(_PRUNE_EVENTS, args).rowcount,
        outbox=db.execute(_PRUNE_OUTBOX, args).rowcount,
        usage=db.execute(_PRUNE_USAGE, args).rowcount,
    )


class PruneStore(StoreBase):
    async def prune(self, now: float, keep_s: float, *, batch: int = PRUNE_BATCH) -> Pruned:
        """Delete what is older than `keep_s` seconds (event ids: at least a day) and may go; one
        transaction per batch, so other coroutines get the store in between."""
        if not keep_s > 0 or batch < 1:
            raise ValueError(f"prune needs keep_s > 0 and batch >= 1 (got {keep_s}, {batch})")
        total = Pruned()
        while True:
            pruned = await self._transact(lambda db: prune_batch(db, now, keep_s, batch))
            total += pruned
            if max(pruned.events, pruned.outbox, pruned.usage) < batch:
                return total
