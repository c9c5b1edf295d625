"""How long pruning holds the store: one batch, a whole backlog, and the hourly prune that finds
nothing, against one event-recording round trip measured in the same run. Not a test: run it by
hand and read the numbers.

    .venv/bin/python -m tests.bench.bench_retention [rows per kind]
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from rooms.store import Store
from rooms.store.prune import prune_batch
from rooms.store.retention import DAY_S, PRUNE_BATCH

NOW = 1_000 * DAY_S
OLD = NOW - 60 * DAY_S
KEEP_S = 30 * DAY_S


def fill(path: str, rows: int, at: float) -> None:
    """`rows` event ids, sent posts of no task, and usage rows of closed tasks (one turn each),
    all stamped `at`, written straight into the file."""
    db = sqlite3.connect(path)
    with db:
        db.execute("INSERT OR IGNORE INTO groups VALUES ('g', 0)")
        db.execute("INSERT OR IGNORE INTO rooms VALUES ('test:C1:T1','test','C1','T1','g',0)")
        start = db.execute("SELECT COALESCE(MAX(id), 0) FROM tasks").fetchone()[0] + 1
        ids = range(start, start + rows)
        db.executemany("INSERT INTO events VALUES (?, ?)", ((f"ev-{at}-{i}", at) for i in ids))
        db.executemany(
            "INSERT INTO outbox (key, room, text, status, created_at, sent_at)"
            " VALUES (?, 'test:C1:T1', 'x', 'sent', ?, ?)",
            ((f"post-{at}-{i}", at, at) for i in ids),
        )
        db.executemany(
            "INSERT INTO tasks (id, room, group_name, text, status, created_at, updated_at,"
            " closed_at) VALUES (?, 'test:C1:T1', 'g', 't', 'closed', ?, ?, ?)",
            ((i, at, at, at) for i in ids),
        )
        db.executemany(
            "INSERT INTO turns (id, task_id, seq, role, phase, status, started_at)"
            " VALUES (?, ?, 1, 'owner', 'work', 'done', ?)",
            ((i, i, at) for i in ids),
        )
        db.executemany(
            "INSERT INTO usage (turn_id, task_id, input_tokens, at) VALUES (?, ?, 10, ?)",
            ((i, i, at) for i in ids),
        )
    db.close()


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await fn()
    return time.perf_counter() - started


async def main(rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "t.db")
        store = await Store.open(path)
        await store.close()
        fill(path, rows, OLD)  # to be pruned
        fill(path, rows, NOW)  # to be kept
        store = await Store.open(path)
        try:
            trips = [
                await timed(lambda i=i: store.record_event(f"probe-{i}", NOW)) for i in range(50)
            ]
            trip = sorted(trips)[len(trips) // 2]
            one = await timed(
                lambda: store._transact(lambda db: prune_batch(db, NOW, KEEP_S, PRUNE_BATCH))
            )
            rest = await timed(lambda: store.prune(NOW, KEEP_S))
            idle = await timed(lambda: store.prune(NOW, KEEP_S))
        finally:
            await store.close()
    print(f"{rows} old + {rows} kept rows of each kind (events, outbox, usage)")
    print(f"{'what':<52}{'ms':>10}{'× round trip':>14}")
    for label, seconds in [
        ("record_event round trip (baseline, median of 50)", trip),
        (f"one batch: {PRUNE_BATCH} rows of each kind (lock held)", one),
        ("prune of the rest of the backlog (several batches)", rest),
        ("the hourly prune that finds nothing", idle),
    ]:
        print(f"{label:<52}{seconds * 1000:>10.2f}{seconds / trip:>14.1f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000))
