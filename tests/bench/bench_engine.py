"""Engine throughput: many rooms of scripted turns through the real engine and store.

    .venv/bin/python -m tests.bench.bench_engine [--rooms 200] [--turns 10] [--scale 10,100,1000]

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
The same run on PostgreSQL, and several engine processes: tests/bench/bench_fleet.py.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite

from rooms.base.model import GroupPolicy, Inbound, RoomRef, Thresholds
from rooms.base.open_caps import OpenCaps
from rooms.core.kept_history import KeptHistory
from rooms.engine import Engine
from rooms.store import Store
from rooms.store.connection import SqliteBackend
from rooms.store.postgres import PostgresBackend
from runners.protocol import RunEvent, RunSpec
from tests.fakes.platform import RecordingPlatform


class InstantRunner:
    """Answers at once; records when each call started and ended, per task."""

    def __init__(self, rounds: int, answer_bytes: int = 0) -> None:
        self.rounds = rounds
        self.answer_bytes = answer_bytes  # each answer padded to about this size
        self.seen: dict[str, int] = defaultdict(int)  # task -> reviewer turns so far
        self.spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
        # The same spans in CPU time of the whole process (steadier than wall time on a loaded
        # machine; the time the runner itself takes is outside them).
        self.cpu_spans: dict[str, list[tuple[float, float]]] = defaultdict(list)

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        started, cpu_started = time.perf_counter(), time.process_time()
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
        if self.answer_bytes:
            text += _padding(self.answer_bytes - len(text), role, self.seen[task])
        yield RunEvent(kind="usage", input_tokens=100, output_tokens=20)
        yield RunEvent(kind="final", text=text)
        self.spans[task].append((started, time.perf_counter()))
        self.cpu_spans[task].append((cpu_started, time.process_time()))


def _padding(size: int, role: str, n: int) -> str:
    """Log-like lines (no finding, no marker), different in every answer: the detectors compare
    answers, and a repeated one would send the task to the arbiter."""
    seed = hashlib.sha256(f"{role} {n}".encode()).hexdigest()
    line = "\nlog " + seed + " {}: " + seed[::-1]
    out: list[str] = []
    total, i = 0, 0
    while total < size:
        out.append(line.format(i))
        total += len(out[-1])
        i += 1
    return "".join(out)


LAST_RUNNER: InstantRunner | None = None  # the last run_engine's, for its CPU spans


class OneGroup:
    def __init__(self, rounds: int = 50) -> None:
        # No cap on open tasks: every room's task runs (with the defaults, 5 per person, most
        # rooms were refused and the run measured refusals).
        unbounded = OpenCaps(per_channel=1_000_000, per_person=1_000_000)
        thresholds = Thresholds(round_cap=max(50, rounds + 2), max_turns=max(60, 2 * rounds + 4))
        self.policy = GroupPolicy(name="bench", thresholds=thresholds, open_caps=unbounded)

    def for_room(self, room: RoomRef) -> GroupPolicy | None:
        return self.policy


class StatementCounter:
    """Counts every statement the store's connection runs, on aiosqlite's own thread, and every
    round trip to that thread."""

    def __init__(self) -> None:
        self.count = 0
        self.round_trips = 0
        self.cpu_s = 0.0  # CPU time of the whole process (both threads) over the run
        # CPU time spent in the store's functions on the database's thread (the SQL, the rows
        # read back, the hand-off's own share there): the rest of cpu_s is the event loop's.
        self.db_cpu_s = 0.0

    def __call__(self, statement: str) -> None:
        self.count += 1

    def _traced(self, execute: Any) -> Any:
        def traced(sql: str, args: Any = ()) -> Any:
            self(sql)
            return execute(sql, args)

        return traced

    def _timed(self, fn: Any) -> Any:
        def timed(db: Any) -> Any:
            started = time.thread_time()
            try:
                return fn(db)
            finally:
                self.db_cpu_s += time.thread_time() - started

        return timed

    async def attach(self, store: Store) -> None:
        backend = store._backend  # the store's one connection and its worker thread
        if isinstance(backend, SqliteBackend):
            conn = backend.db
            await conn._execute(conn._conn.set_trace_callback, self)
        else:  # PostgreSQL (rooms/store/postgres.py): count at its sqlite3-like execute
            assert isinstance(backend, PostgresBackend)
            for pg in backend.conns:
                pg.execute = self._traced(pg.execute)  # type: ignore[method-assign]
        call = backend.call

        async def counted(fn: Any) -> Any:
            self.round_trips += 1
            return await call(self._timed(fn))

        backend.call = counted  # type: ignore[method-assign]


async def run_engine(
    db: Path | str, rooms: int, rounds: int, *, answer_bytes: int = 0, tag: str = ""
) -> tuple[float, int, list[float], StatementCounter]:
    """`db`: a SQLite file, or a PostgreSQL URL (tests/bench/bench_fleet.py). `tag` names the
    rooms and events apart from an earlier run on the same file."""
    store = await Store.open(str(db))
    counter = StatementCounter()
    await counter.attach(store)
    runner = InstantRunner(rounds, answer_bytes)
    global LAST_RUNNER
    LAST_RUNNER = runner
    platform = RecordingPlatform()
    engine = Engine(store, runner, platform, OneGroup(rounds))
    await engine.start()
    started = time.perf_counter()
    cpu_started = time.process_time()
    for i in range(rooms):
        await engine.handle(
            Inbound(
                room=RoomRef("bench", "C", f"T{tag}{i}"),
                user="U1",
                text=f"task {i}: make parse() handle every case",
                event_id=f"e{tag}{i}",
                mentions_bot=True,
            )
        )
    await engine.idle()
    elapsed = time.perf_counter() - started
    counted = StatementCounter()  # a copy: the counts up to here, not engine.stop's
    counted.cpu_s = time.process_time() - cpu_started
    counted.count, counted.round_trips = counter.count, counter.round_trips
    counted.db_cpu_s = counter.db_cpu_s
    await engine.stop()
    await store.close()
    gaps = [
        nxt[0] - cur[1]
        for spans in runner.spans.values()
        for cur, nxt in zip(spans, spans[1:], strict=False)
    ]
    return elapsed, sum(len(s) for s in runner.spans.values()), gaps, counted


async def history_by_round(
    tmp: Path, answer_bytes: int, rounds: int, *, kept: bool
) -> tuple[float, float, float, float]:
    """One task of `rounds` rounds with answers of `answer_bytes`: the overhead of a round (an
    owner step and a review step: from the end of one run to the start of the next, twice) at
    its first five rounds and at its last five, as medians, in wall time and in CPU time of the
    process; `kept=False` reads the history from the store before every step, as before."""
    if kept:
        return await _history_by_round(tmp, answer_bytes, rounds)
    real = KeptHistory.valid_for
    KeptHistory.valid_for = lambda self, task: None  # type: ignore[method-assign]
    try:
        return await _history_by_round(tmp, answer_bytes, rounds)
    finally:
        KeptHistory.valid_for = real  # type: ignore[method-assign]


async def _history_by_round(
    tmp: Path, answer_bytes: int, rounds: int
) -> tuple[float, float, float, float]:
    db = tmp / f"history-{answer_bytes}-{time.monotonic_ns()}.db"
    _, _, gaps, _ = await run_engine(db, 1, rounds, answer_bytes=answer_bytes)
    assert LAST_RUNNER is not None
    [spans] = LAST_RUNNER.cpu_spans.values()
    cpu_gaps = [nxt[0] - cur[1] for cur, nxt in zip(spans, spans[1:], strict=False)]
    wall = _ends(gaps)
    cpu = _ends(cpu_gaps)
    return wall[0] * 1000, wall[1] * 1000, cpu[0] * 1000, cpu[1] * 1000


def _ends(gaps: list[float]) -> tuple[float, float]:
    """The median overhead of a round (two steps) over the first five and the last five."""
    by_round = [a + b for a, b in zip(gaps[0::2], gaps[1::2], strict=False)]
    return statistics.median(by_round[:5]), statistics.median(by_round[-5:])


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
    parser.add_argument(
        "--history-rounds",
        type=int,
        default=50,
        help="rounds of the one-task runs with 4 KB and 1 MB answers (0: skip them)",
    )
    parser.add_argument(
        "--scale",
        default="10,100,1000",
        help="room counts of the per-turn CPU and solo p50 table ('': skip it)",
    )
    parser.add_argument("--history-one", nargs=3, help=argparse.SUPPRESS)  # SIZE ROUNDS kept|read
    args = parser.parse_args()
    if args.history_one:
        size, history_rounds, how = args.history_one
        await _history_one(int(size), int(history_rounds), how == "kept")
        return
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
        # Where a turn's CPU goes (issue 28: which part of the gap is what).
        ("CPU per turn", f"{sql.cpu_s / turns * 1000:.2f} ms"),
        ("  on the database thread (store functions, SQL)", f"{sql.db_cpu_s / turns * 1e3:.2f} ms"),
        (
            "  on the event loop (engine, hand-offs, outbox)",
            f"{(sql.cpu_s - sql.db_cpu_s) / turns * 1000:.2f} ms",
        ),
        ("floor CPU per write (3 round trips)", f"{floor_cpu / turns * 1000:.2f} ms"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    if args.scale:
        await print_scale([int(n) for n in args.scale.split(",")], rounds)
    if args.history_rounds:
        await print_history(args.history_rounds)


SOLO_ROOMS = 5


async def print_scale(sizes: list[int], rounds: int) -> None:
    """The per-turn goal restated (issue 28): with many rooms ready at once, a turn's p99 is
    its wait in the queue (about the CPU per turn × the rooms ready), not its own cost. What
    must stay flat as rooms grow is the CPU a turn costs and a lone room's overhead: for each
    size, the rooms run, then SOLO_ROOMS more rooms, each alone, on the same store file (all
    their rows in it), and the floor's CPU per 1-row transaction at the same concurrency, in
    the same run."""
    print(f"\nper turn as rooms grow ({rounds * 2 + 1} turns a room; CPU of the whole process)")
    print(
        f"{'rooms':>6} | {'turns':>6} | {'CPU/turn':>9} | {'floor CPU/write':>15} | {'ratio':>6}"
        f" | {'solo p50':>9} | {'p50':>8} | {'p99':>8} | {'rooms × CPU/turn':>16}"
    )
    cpu, solo = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for rooms in sizes:
            db = Path(tmp) / f"scale-{rooms}.db"
            _, turns, gaps, counted = await run_engine(db, rooms, rounds)
            solo_gaps = []
            for k in range(SOLO_ROOMS):  # one after another: a lone room's p50 over enough turns
                solo_gaps += (await run_engine(db, 1, rounds, tag=f"solo{k}"))[2]
            _, floor_cpu = await run_floor(Path(tmp) / f"floor-{rooms}.db", turns, rooms)
            per_turn, per_write = counted.cpu_s / turns, floor_cpu / turns
            cpu.append(per_turn)
            solo.append(statistics.median(solo_gaps))
            print(
                f"{rooms:>6} | {turns:>6} | {per_turn * 1000:>6.2f} ms"
                f" | {per_write * 1000:>12.3f} ms | {per_turn / per_write:>5.1f}x"
                f" | {solo[-1] * 1000:>6.2f} ms"
                f" | {statistics.median(gaps) * 1000:>5.1f} ms"
                f" | {percentile(gaps, 99) * 1000:>5.1f} ms | {rooms * per_turn * 1000:>13.1f} ms"
            )
    print(
        f"{sizes[-1]} rooms ÷ {sizes[0]} rooms: CPU per turn {cpu[-1] / cpu[0]:.2f}x, "
        f"solo p50 {solo[-1] / solo[0]:.2f}x (goal: flat, ≤ 1.5x)"
    )


async def print_history(rounds: int) -> None:
    """The step's overhead as the history grows: kept in memory (now) beside read from the store
    before every step (before), in the same run."""
    print(f"\noverhead per round, one task of {rounds} rounds (median of 5 rounds at each end)")
    print(
        f"{'answers':>8} | {'history':>24} | {'wall: rounds 1-5':>16} | {'last 5':>9} |"
        f" {'ratio':>6} | {'CPU: rounds 1-5':>15} | {'last 5':>9} | {'ratio':>6}"
    )
    for size, label in ((4 * 1024, "4 KB"), (1024 * 1024, "1 MB")):
        for kept, how in ((False, "read every step (before)"), (True, "kept (now)")):
            w0, w1, c0, c1 = _history_in_a_process(size, rounds, kept)
            print(
                f"{label:>8} | {how:>24} | {w0:>13.1f} ms | {w1:>6.1f} ms | {w1 / w0:>5.2f}×"
                f" | {c0:>12.1f} ms | {c1:>6.1f} ms | {c1 / c0:>5.2f}×"
            )


def _history_in_a_process(size: int, rounds: int, kept: bool) -> list[float]:
    """`history_by_round` in a fresh process: a run that freed hundreds of MB leaves the
    allocator in a state that changes the next run's timings (seen: 1.3× became 2.6×)."""
    args = ["--history-one", str(size), str(rounds), "kept" if kept else "read"]
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench.bench_engine", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return [float(x) for x in json.loads(done.stdout.strip().splitlines()[-1])]


async def _history_one(size: int, rounds: int, kept: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(list(await history_by_round(Path(tmp), size, rounds, kept=kept))))


if __name__ == "__main__":
    asyncio.run(main())
