"""Engine throughput: many rooms of scripted turns through the real engine and store.

    .venv/bin/python -m tests.bench.bench_engine [--rooms 200] [--turns 10]

Each room runs one task whose owner and reviewer answer instantly (a scripted runner, no
process): owner DONE / reviewer CHANGES_REQUESTED with a new finding each round, the last reviewer
turn APPROVED, then the owner's finalize turn. Printed: turns/s, the orchestration overhead per
turn (from the end of one runner call to the start of the next in the same task: prompt
building, marker parsing, detectors, store writes, outbox), peak RSS, and the ratio of the engine
run to a floor measured in the same run: the same number of single-row write transactions on a
store file opened the same way (WAL, synchronous=NORMAL), issued as concurrently as the rooms, and
the SQL statements per turn the store ran (counted by a trace callback on aiosqlite's underlying
sqlite3 connection; BEGIN and COMMIT count) and the round trips per turn to aiosqlite's worker
thread (calls queued on it: a statement each, or a whole transaction run there at once).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite

from rooms.base.model import GroupPolicy, Inbound, RoomRef, Thresholds
from rooms.base.open_caps import OpenCaps
from rooms.engine import Engine
from rooms.store import Store
from runners.protocol import RunEvent, RunSpec
from tests.fakes.platform import RecordingPlatform


class InstantRunner:
    """Answers at once; records when each call started and ended, per task."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.seen: dict[str, int] = defaultdict(int)  # task -> reviewer turns so far
        self.spans: dict[str, list[tuple[float, float]]] = defaultdict(list)

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        started = time.perf_counter()
        task = spec.env.get("TRIBUNAL_TASK", spec.group)
        role = spec.request.role
        if role == "reviewer":
            self.seen[task] += 1
            n = self.seen[task]
            if n >= self.rounds:
                text = "APPROVED\nall good"
            else:
                text = f"CHANGES_REQUESTED\n- finding {n}: handle case {n * 7} in parse()"
        else:
            text = f"DONE\nround {self.seen[task] + 1}: changed parse() for case {self.seen[task]}"
        yield RunEvent(kind="usage", input_tokens=100, output_tokens=20)
        yield RunEvent(kind="final", text=text)
        self.spans[task].append((started, time.perf_counter()))


class OneGroup:
    def __init__(self) -> None:
        # Every room opens its task: the open-task caps (30 rooms of one person in one channel)
        # would refuse some, and which ones depends on how fast the others finish.
        caps = OpenCaps(per_channel=1_000_000, per_person=1_000_000)
        self.policy = GroupPolicy(name="bench", thresholds=Thresholds(round_cap=50), open_caps=caps)

    def for_room(self, room: RoomRef) -> GroupPolicy | None:
        return self.policy


class StatementCounter:
    """Counts every statement the store's connection runs, on aiosqlite's own thread, and every
    round trip to that thread."""

    def __init__(self) -> None:
        self.count = 0
        self.round_trips = 0
        self.cpu_s = 0.0  # CPU time of the whole process (both threads) over the run

    def __call__(self, statement: str) -> None:
        self.count += 1

    async def attach(self, store: Store) -> None:
        conn = store._db  # the store's one aiosqlite connection
        await conn._execute(conn._conn.set_trace_callback, self)
        queue = conn._execute

        async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
            self.round_trips += 1
            return await queue(fn, *args, **kwargs)

        conn._execute = counted  # type: ignore[method-assign]


async def run_engine(
    db: Path, rooms: int, rounds: int
) -> tuple[float, int, list[float], StatementCounter]:
    store = await Store.open(str(db))
    counter = StatementCounter()
    await counter.attach(store)
    runner = InstantRunner(rounds)
    platform = RecordingPlatform()
    engine = Engine(store, runner, platform, OneGroup())
    await engine.start()
    started = time.perf_counter()
    cpu_started = time.process_time()
    for i in range(rooms):
        await engine.handle(
            Inbound(
                room=RoomRef("bench", "C", f"T{i}"),
                user="U1",
                text=f"task {i}: make parse() handle every case",
                event_id=f"e{i}",
                mentions_bot=True,
            )
        )
    await engine.idle()
    elapsed = time.perf_counter() - started
    counted = StatementCounter()  # a copy: the counts up to here, not engine.stop's
    counted.cpu_s = time.process_time() - cpu_started
    counted.count, counted.round_trips = counter.count, counter.round_trips
    await engine.stop()
    await store.close()
    gaps = [
        nxt[0] - cur[1]
        for spans in runner.spans.values()
        for cur, nxt in zip(spans, spans[1:], strict=False)
    ]
    return elapsed, sum(len(s) for s in runner.spans.values()), gaps, counted


async def run_floor(db: Path, writes: int, concurrency: int) -> tuple[float, float]:
    """The same number of single-row write transactions, as concurrent as the rooms."""
    conn = await aiosqlite.connect(str(db), isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=5000"):
        await conn.execute(f"PRAGMA {pragma}")
    await conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, room INTEGER, body TEXT)")
    lock = asyncio.Lock()

    async def room(r: int, n: int) -> None:
        for k in range(n):
            async with lock:
                await conn.execute("BEGIN IMMEDIATE")
                await conn.execute("INSERT INTO t (room, body) VALUES (?, ?)", (r, f"turn {k}"))
                await conn.execute("COMMIT")

    per_room = max(1, writes // concurrency)
    started, cpu_started = time.perf_counter(), time.process_time()
    await asyncio.gather(*(room(r, per_room) for r in range(concurrency)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    await conn.close()
    return elapsed, cpu


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=200)
    parser.add_argument("--turns", type=int, default=10, help="owner+reviewer turns per room")
    args = parser.parse_args()
    rounds = max(1, args.turns // 2)
    with tempfile.TemporaryDirectory() as tmp:
        _, solo_turns, solo_gaps, solo_sql = await run_engine(Path(tmp) / "solo.db", 1, rounds)
        # The floor before and after the engine, and their mean: on a shared machine one run of
        # it can be several times slower than the next. CPU time is steadier than wall time.
        first = await run_floor(Path(tmp) / "floor1.db", solo_turns * args.rooms, args.rooms)
        engine_s, turns, gaps, sql = await run_engine(Path(tmp) / "engine.db", args.rooms, rounds)
        second = await run_floor(Path(tmp) / "floor2.db", turns, args.rooms)
        floor_s, floor_cpu = (first[0] + second[0]) / 2, (first[1] + second[1]) / 2
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = [
        ("rooms", f"{args.rooms}"),
        ("turns run (incl. finalize)", f"{turns}"),
        ("engine wall time", f"{engine_s:.2f} s"),
        ("turns/s", f"{turns / engine_s:.0f}"),
        ("overhead per turn, one room alone, p50", f"{statistics.median(solo_gaps) * 1000:.1f} ms"),
        ("overhead per turn p50", f"{statistics.median(gaps) * 1000:.1f} ms"),
        ("overhead per turn p99", f"{percentile(gaps, 99) * 1000:.1f} ms"),
        ("SQL statements per turn, one room alone", f"{solo_sql.count / solo_turns:.1f}"),
        ("SQL statements per turn", f"{sql.count / turns:.1f}"),
        ("round trips to aiosqlite's thread per turn", f"{sql.round_trips / turns:.1f}"),
        ("peak RSS", f"{rss_mb:.0f} MiB"),
        (
            "floor: same number of raw store writes",
            f"{floor_s:.2f} s (runs: {first[0]:.2f} s, {second[0]:.2f} s)",
        ),
        ("engine / floor", f"{engine_s / floor_s:.1f}x"),
        ("engine / floor, CPU time", f"{sql.cpu_s / floor_cpu:.1f}x"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    asyncio.run(main())
