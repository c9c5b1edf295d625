"""The store on PostgreSQL and several engine processes on it (issue 19).

    .venv/bin/python -m tests.bench.bench_fleet [--rooms 100] [--turns 10] [--fleet-tasks 150]

Starts its own PostgreSQL (tests/fakes/postgres.py: a unix socket, fsync and synchronous commit
off, as the tests run it; the SQLite file is WAL with synchronous=NORMAL, which does not fsync
each commit either). In one run:

1. bench_engine's run (rooms × turns of an instant scripted runner through the real engine and
   store, one process) on SQLite and on PostgreSQL: turns/s, the overhead per turn (end of one
   runner call to the start of the next in the same task), statements and round trips to the
   store's worker thread per turn, CPU per turn; and the ratio PostgreSQL / SQLite.
2. The floor on the same PostgreSQL: the same number of single-row write transactions, as
   concurrent as the rooms, with psycopg's native async connection (no thread) and with the
   store's way (a synchronous connection on one worker thread, one hop per transaction); the
   engine's run against the faster of the two (one turn against one write: a turn is about 18
   statements in 4 transactions, so the ratio cannot come near 1).
3. 1, 2 and 4 engine processes (tests/fakes/fleet_child.py, instant turns) sharing
   `--fleet-tasks` tasks opened once they all listen: turns/s from the first task opened to the
   last closed, the ratio to one process, the CPU per turn of the engine processes and of the
   database server (its backends), and how many cores they kept busy:
   scaling stops where the machine's cores (shared with the server, and here with other work)
   are used up; a CPU per turn that stays flat is what more processes on more cores need.
4. Wake-up latency: from a task opened by one connection to the notification at a listener on
   another (LISTEN/NOTIFY), p50/p99, against the polls it replaces (the deliverer's 1 s, the
   scan's 30 s: a poll finds a change after half its period on average).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg

from rooms.base.model import RoomRef
from rooms.engine import SCAN_S
from rooms.store import Store
from rooms.store.listen import parse
from tests.bench.bench_engine import percentile, run_engine
from tests.fakes import postgres as pg_fake

ROOT = Path(__file__).resolve().parents[2]
DELIVERER_POLL_S = 1.0  # rooms/core/outbox.py's poll_s


async def floor_native(url: str, writes: int, concurrency: int) -> tuple[float, float]:
    """Single-row write transactions on psycopg's async connection: no worker thread."""
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    await conn.execute("CREATE TABLE t (id BIGSERIAL PRIMARY KEY, room BIGINT, body TEXT)")
    lock = asyncio.Lock()

    async def room(r: int, n: int) -> None:
        for k in range(n):
            async with lock, conn.transaction():
                await conn.execute("INSERT INTO t (room, body) VALUES (%s, %s)", (r, f"turn {k}"))

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(room(r, max(1, writes // concurrency)) for r in range(concurrency)))
    result = time.perf_counter() - started, time.process_time() - cpu
    await conn.close()
    return result


async def floor_thread(url: str, writes: int, concurrency: int) -> tuple[float, float]:
    """The same on a synchronous connection on one worker thread, one hop per transaction (how
    the store runs a transaction on PostgreSQL)."""
    thread = ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()
    conn = await loop.run_in_executor(thread, lambda: psycopg.connect(url, autocommit=True))
    await loop.run_in_executor(
        thread,
        conn.execute,
        "CREATE TABLE t2 (id BIGSERIAL PRIMARY KEY, room BIGINT, body TEXT)",
    )
    lock = asyncio.Lock()

    def write(r: int, k: int) -> None:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO t2 (room, body) VALUES (%s, %s)", (r, f"turn {k}"))
        conn.execute("COMMIT")

    async def room(r: int, n: int) -> None:
        for k in range(n):
            async with lock:
                await loop.run_in_executor(thread, write, r, k)

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(room(r, max(1, writes // concurrency)) for r in range(concurrency)))
    result = time.perf_counter() - started, time.process_time() - cpu
    await loop.run_in_executor(thread, conn.close)
    thread.shutdown()
    return result


def cpu_s(pid: int, *, children: bool = False) -> float:
    """CPU seconds of a process (all its threads), and with `children` of the children it has
    reaped (PostgreSQL's postmaster reaps each session's backend when it disconnects)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11 : 15 if children else 13])  # utime stime [cutime cstime]
    return ticks / os.sysconf("SC_CLK_TCK")


def server_cpu_s(pid: int) -> float:
    """CPU seconds of the database server: the postmaster, its live children (one backend per
    session, and its helpers) and the children it has reaped."""
    total = cpu_s(pid, children=True)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid:  # its parent
            total += sum(int(x) for x in fields[11:13]) / os.sysconf("SC_CLK_TCK")
    return total


async def fleet(
    url: str, processes: int, tasks: int, folder: Path, server_pid: int
) -> tuple[float, int, float, float, float]:
    """`processes` engines on `url` sharing `tasks` tasks: (wall s, turns, pickup p50 ms, CPU
    s of the engine processes, CPU s of the database server)."""
    folder.mkdir()
    ids = [f"P{i}" for i in range(processes)]
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.fakes.fleet_child",
            url,
            e,
            str(folder),
            "0",
            "30",
            cwd=ROOT,
            start_new_session=True,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        for e in ids
    ]
    store = await Store.open(url)
    try:
        while not all((folder / f"{e}.ready").exists() for e in ids):
            await asyncio.sleep(0.05)
        ready_cpu = sum(cpu_s(p.pid) for p in procs)  # their start (imports) is not a turn's
        server_before = server_cpu_s(server_pid)
        opened: dict[int, float] = {}
        started = time.perf_counter()
        for n in range(tasks):
            room = RoomRef("test", "C1", f"T{n}")
            at = time.time()
            task = await store.open_task(room, "g", f"task {n}", "alice", at)
            assert task is not None
            opened[task.id] = at
        while await store.open_tasks() or await store.count_pending():
            await asyncio.sleep(0.02)
        wall = time.perf_counter() - started
        engines_cpu = sum(cpu_s(p.pid) for p in procs) - ready_cpu
        server_cpu = server_cpu_s(server_pid) - server_before
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                await asyncio.wait_for(p.wait(), 30)
            except TimeoutError:
                os.killpg(p.pid, signal.SIGKILL)
        await store.close()
    turns, first_start = 0, {}
    for e in ids:
        for line in (folder / f"{e}.turns").read_text().splitlines():
            x = json.loads(line)
            if "start" in x:
                turns += 1
                task_id = int(x["start"][0])
                first_start[task_id] = min(first_start.get(task_id, x["t"]), x["t"])
    pickup = [first_start[t] - opened[t] for t in opened if t in first_start]
    return wall, turns, statistics.median(pickup) * 1000, engines_cpu, server_cpu


async def wake_latency(url: str, count: int) -> list[float]:
    """Seconds from the call that opens a task to its notification at another connection."""
    writer, listener = await Store.open(url), await Store.open(url)
    wakes = listener.wakes()
    assert wakes is not None
    await anext(wakes)  # RESYNC: listening
    latencies = []
    try:
        for n in range(count):
            room = RoomRef("test", "W", f"T{n}")
            sent = time.perf_counter()
            await writer.open_task(room, "g", "wake", "alice", time.time())
            while True:
                wake = parse(await anext(wakes))
                if wake is not None and wake.kind == "task" and wake.room == room.key:
                    break
            latencies.append(time.perf_counter() - sent)
    finally:
        await wakes.aclose()  # type: ignore[attr-defined]
        await writer.close()
        await listener.close()
    return latencies


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=100)
    parser.add_argument("--turns", type=int, default=10, help="owner+reviewer turns per room")
    parser.add_argument("--fleet-tasks", type=int, default=150)
    parser.add_argument("--processes", default="1,2,4")
    args = parser.parse_args()
    rounds = max(1, args.turns // 2)
    with pg_fake.server() as server, tempfile.TemporaryDirectory() as tmp:
        assert server is not None, "PostgreSQL is not installed (tests/run installs it)"
        rows: list[tuple[str, str]] = []
        runs = {}
        for kind in ("sqlite", "postgresql"):
            db = str(Path(tmp) / "engine.db") if kind == "sqlite" else server.fresh_url()
            wall, turns, gaps, sql = await run_engine(db, args.rooms, rounds)
            runs[kind] = (wall, turns, gaps, sql)
            rows += [
                (f"{kind}: turns/s ({args.rooms} rooms, {turns} turns)", f"{turns / wall:.0f}"),
                (f"{kind}: overhead per turn p50 / p99",
                 f"{statistics.median(gaps) * 1000:.1f} / {percentile(gaps, 99) * 1000:.1f} ms"),
                (f"{kind}: CPU per turn", f"{sql.cpu_s / turns * 1000:.2f} ms"),
                (f"{kind}: statements / round trips per turn",
                 f"{sql.count / turns:.1f} / {sql.round_trips / turns:.1f}"),
            ]  # fmt: skip
        sq, pg = runs["sqlite"], runs["postgresql"]
        rows += [
            ("postgresql / sqlite: overhead per turn p50",
             f"{statistics.median(pg[2]) / statistics.median(sq[2]):.2f}x"),
            ("postgresql / sqlite: wall per turn",
             f"{(pg[0] / pg[1]) / (sq[0] / sq[1]):.2f}x"),
            ("postgresql / sqlite: CPU per turn",
             f"{(pg[3].cpu_s / pg[1]) / (sq[3].cpu_s / sq[1]):.2f}x"),
        ]  # fmt: skip
        native = await floor_native(server.fresh_url(), pg[1], args.rooms)
        threaded = await floor_thread(server.fresh_url(), pg[1], args.rooms)
        floor = min(native, threaded)
        rows += [
            ("floor: raw single-row txns, async psycopg", f"{native[0]:.2f} s"),
            ("floor: the same on a worker thread", f"{threaded[0]:.2f} s"),
            ("thread / async floor (the hop's cost)", f"{threaded[0] / native[0]:.2f}x"),
            ("engine on postgresql / the faster floor, wall", f"{pg[0] / floor[0]:.1f}x"),
            ("engine on postgresql / the faster floor, CPU", f"{pg[3].cpu_s / floor[1]:.1f}x"),
        ]
        base = None
        for n in (int(x) for x in args.processes.split(",")):
            wall, turns, pickup, engines_cpu, server_cpu = await fleet(
                server.fresh_url(), n, args.fleet_tasks, Path(tmp) / f"fleet{n}", server.process.pid
            )
            rate = turns / wall
            base = base or rate
            busy = (engines_cpu + server_cpu) / wall  # cores used by the engines and the server
            who = f"{n} engine process(es)"
            rows += [
                (f"{who}: turns/s ({turns} turns)", f"{rate:.0f}"),
                (f"{who}: vs 1 process", f"{rate / base:.2f}x"),
                (f"{who}: CPU per turn, engines + server",
                 f"{engines_cpu / turns * 1e3:.1f} + {server_cpu / turns * 1e3:.1f} ms"),
                (f"{who}: cores they kept busy", f"{busy:.2f} of {os.cpu_count()}"),
                (f"{who}: task opened -> first turn p50", f"{pickup:.0f} ms"),
            ]  # fmt: skip
        latencies = await wake_latency(server.fresh_url(), 200)
        p50 = statistics.median(latencies) * 1000
        rows += [
            ("LISTEN/NOTIFY wake p50 / p99",
             f"{p50:.1f} / {percentile(latencies, 99) * 1000:.1f} ms"),
            ("poll it replaces: deliverer (mean wait)",
             f"{DELIVERER_POLL_S * 500:.0f} ms ({DELIVERER_POLL_S * 500 / p50:.0f}x)"),
            ("poll it replaces: scan (mean wait)",
             f"{SCAN_S * 500:.0f} ms ({SCAN_S * 500 / p50:.0f}x)"),
        ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    asyncio.run(main())
