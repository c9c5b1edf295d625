"""The dashboard under load: the tasks page with 10,000 tasks, and live pages beside a busy engine.

    .venv/bin/python -m tests.bench.bench_dashboard [--tasks 10000] [--renders 200]
        [--pages 50] [--rooms 200] [--turns 10] [--repeats 2]

1. Render: a store seeded with `--tasks` tasks (a tenth waiting for people, a tenth with a turn
   running, the rest closed) behind the real dashboard server. An operator's client (aiohttp, one
   connection) asks for each URL `--renders` times; printed: p50 and p95 of the whole request,
   for the tasks page, its rows part (what HTMX fetches on every change), a filtered page, and as
   the floors of the same run the page's read query alone (the store, no HTTP) and a static file
   (HTTP alone, no store): the ratios say where a render's time goes.

2. Fan-out: `--rooms` rooms of `--turns` scripted turns each through the real engine (the instant
   runner of bench_engine), with the dashboard served in the same process (as `tribunal serve`
   runs it), once with no page open and once with `--pages` open pages: each holds the event
   stream and fetches the rows part on every change, as HTMX does. The pages run in another
   process (a browser is not the bot's process). The two runs alternate `--repeats` times in the
   same run, each on a fresh database; printed: the engine's turns/s of each run, the medians,
   and the ratio (goal: at most 5 % slower with the pages open), with the events and part
   fetches the pages made.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

import bot.platforms  # noqa: F401  (declares the platforms the settings read)
from bot.adapter import Router
from bot.app import App
from bot.dashboard.server import Running, running_dashboard
from bot.dashboard.sessions import COOKIE, new_session
from bot.policies import SettingsPolicies
from bot.settings import Settings, load_settings
from rooms.base.model import Inbound, RoomRef
from rooms.engine import Engine
from rooms.store import Store
from rooms.store.dashboard_reads import TaskFilter
from tests.bench.bench_engine import InstantRunner, percentile
from tests.fakes.platform import RecordingPlatform

CHANNEL = "CBENCH"
TOML = """
[dashboard]
port = 0

[groups.bench]
platform = "slack"
channel = "CBENCH"
approvers = ["UBOSS"]
max_open_tasks = 1000000
max_open_tasks_per_person = 1000000
"""


def bench_settings(folder: Path, db: Path) -> Settings:
    config = folder / "tribunal.toml"
    config.write_text(TOML, encoding="utf-8")
    return load_settings(config, env_file=None, data=folder / "data", db=db)


def seed(db: Path, tasks: int) -> None:
    """`tasks` tasks in one group, written straight into the migrated file (one transaction)."""
    now = time.time()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO groups (name, created_at) VALUES ('bench', ?) ON CONFLICT DO NOTHING",
            (now,),
        )
        for i in range(tasks):
            room = f"slack:{CHANNEL}:T{i}"
            status = "waiting_human" if i % 10 == 0 else "owner_turn" if i % 10 == 1 else "closed"
            conn.execute(
                "INSERT INTO rooms (key, platform, channel, thread, group_name, created_at)"
                " VALUES (?, 'slack', ?, ?, 'bench', ?)",
                (room, CHANNEL, f"T{i}", now),
            )
            task_id = conn.execute(
                "INSERT INTO tasks (room, group_name, text, status, rounds, turns, tokens,"
                " cost_usd, created_at, updated_at, closed_at) VALUES"
                " (?, 'bench', ?, ?, 2, 5, 1200, 0.05, ?, ?, ?) RETURNING id",
                (
                    room,
                    f"task {i}: make parse() handle case {i} " + "and more words " * 8,
                    status,
                    now - i,
                    now - i,
                    now - i if status == "closed" else None,
                ),
            ).fetchone()[0]
            if status == "owner_turn":
                conn.execute(
                    "INSERT INTO turns (task_id, seq, role, phase, status, started_at)"
                    " VALUES (?, 1, 'owner', 'work', 'running', ?)",
                    (task_id, now - 5),
                )
    conn.close()


@asynccontextmanager
async def served(
    folder: Path, db: Path, runner: InstantRunner | None = None
) -> AsyncIterator[tuple[Engine, Running, str]]:
    """The engine (instant runner, a recording platform) and the dashboard on `db`; yields the
    engine, the running dashboard and an operator's cookie."""
    settings = bench_settings(folder, db)
    store = await Store.open(str(db))
    policies = SettingsPolicies(settings)
    engine = Engine(store, runner or InstantRunner(5), RecordingPlatform(), policies)
    await engine.start()
    app = App(settings, store, engine, policies, Router([]))
    try:
        async with running_dashboard(app, settings) as running:
            assert running is not None
            _, cookie = new_session(running.dashboard.key, operator=True, now=time.time(), hours=1)
            yield engine, running, cookie
    finally:
        await engine.stop()
        await store.close()


async def timed_gets(
    session: aiohttp.ClientSession, url: str, times: int
) -> tuple[float, float, int]:
    """p50 and p95 of `times` GETs (ms), and the size of the last answer."""
    spent: list[float] = []
    size = 0
    for _ in range(times):
        started = time.perf_counter()
        async with session.get(url) as response:
            body = await response.read()
            assert response.status == 200, (url, response.status)
        spent.append((time.perf_counter() - started) * 1000)
        size = len(body)
    return statistics.median(spent), percentile(spent, 95), size


async def render(tasks: int, renders: int) -> list[tuple[str, float, float, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        folder, db = Path(tmp), Path(tmp) / "tribunal.db"
        await (await Store.open(str(db))).close()  # the schema, migrated

        seed(db, tasks)
        async with served(folder, db) as (_, running, cookie):
            base = f"http://127.0.0.1:{running.port}"
            jar = aiohttp.CookieJar(unsafe=True)
            jar.update_cookies({COOKIE: cookie})
            rows: list[tuple[str, float, float, str]] = []
            async with aiohttp.ClientSession(cookie_jar=jar) as session:
                for label, path in (
                    ("tasks page", "/"),
                    ("rows part (HTMX refresh)", "/tasks/part"),
                    ("tasks page, status=waiting_human", "/?status=waiting_human"),
                    ("floor: a static file (HTTP only)", "/static/dashboard.css"),
                ):
                    p50, p95, size = await timed_gets(session, base + path, renders)
                    rows.append((label, p50, p95, f"{size / 1024:.0f} KiB"))
            # The page's reads alone, on the dashboard's own connection: no HTTP, no template.
            spent = []
            for _ in range(renders):
                started = time.perf_counter()
                await running.dashboard.store.task_lines(TaskFilter())
                spent.append((time.perf_counter() - started) * 1000)
            rows.append(
                ("floor: its read query alone", statistics.median(spent), percentile(spent, 95), "")
            )
    return rows


async def engine_run(
    pages: int, rooms: int, rounds: int
) -> tuple[float, int, dict[str, int], float]:
    """turns/s of `rooms` rooms with `pages` live pages open (in another process), and the
    bot process's CPU time per turn (ms; steadier than wall time on a shared machine)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder, db = Path(tmp), Path(tmp) / "tribunal.db"
        runner = InstantRunner(rounds)
        async with served(folder, db, runner) as (engine, running, cookie):
            clients = None
            if pages:
                clients = subprocess.Popen(
                    [sys.executable, "-m", "tests.bench.bench_dashboard", "--as-pages"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                assert clients.stdin is not None
                clients.stdin.write(json.dumps([running.port, cookie, pages]) + "\n")
                clients.stdin.flush()
                async with asyncio.timeout(60):
                    while running.dashboard.changes.listeners < pages:
                        await asyncio.sleep(0.05)
            started, cpu_started = time.perf_counter(), time.process_time()
            for i in range(rooms):
                await engine.handle(
                    Inbound(
                        room=RoomRef("slack", CHANNEL, f"T{i}"),
                        user="U1",
                        text=f"task {i}: make parse() handle every case",
                        event_id=f"e{i}",
                        mentions_bot=True,
                    )
                )
            await engine.idle()
            elapsed = time.perf_counter() - started
            cpu = time.process_time() - cpu_started
            turns = sum(len(s) for s in runner.spans.values())
            seen = {"events": 0, "fetches": 0}
            if clients is not None:
                clients.send_signal(signal.SIGTERM)
                out, _ = clients.communicate(timeout=30)
                seen = json.loads(out.strip().splitlines()[-1])
    return turns / elapsed, turns, seen, cpu / turns * 1000


async def as_pages() -> None:
    """The other process: `pages` pages, each on the event stream, fetching the rows part on
    every change (as HTMX does), until SIGTERM; then prints what they saw."""
    port, cookie, pages = json.loads(sys.stdin.readline())
    base = f"http://127.0.0.1:{port}"
    seen = {"events": 0, "fetches": 0}
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)

    async def page() -> None:
        jar = aiohttp.CookieJar(unsafe=True)
        jar.update_cookies({COOKIE: cookie})
        async with (
            aiohttp.ClientSession(cookie_jar=jar) as session,
            session.get(base + "/events", timeout=aiohttp.ClientTimeout(total=None)) as stream,
        ):
            async for line in stream.content:
                if line.startswith(b"event: change"):
                    seen["events"] += 1
                    async with session.get(base + "/tasks/part") as part:
                        await part.read()
                        seen["fetches"] += 1

    running = [asyncio.create_task(page()) for _ in range(pages)]
    await stop.wait()
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)
    print(json.dumps(seen))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--renders", type=int, default=200)
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--rooms", type=int, default=200)
    parser.add_argument("--turns", type=int, default=10, help="owner+reviewer turns per room")
    parser.add_argument("--repeats", type=int, default=3, help="0: the render part only")
    parser.add_argument("--as-pages", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.as_pages:
        await as_pages()
        return
    print(f"render, {args.tasks} tasks in the store, {args.renders} requests each")
    rows = await render(args.tasks, args.renders)
    print(f"{'':<36} {'p50':>9} {'p95':>9}  size")
    for label, p50, p95, size in rows:
        print(f"{label:<36} {p50:>6.1f} ms {p95:>6.1f} ms  {size}")
    page_p95, query_p95, static_p95 = rows[0][2], rows[4][2], rows[3][2]
    print(f"tasks page p95 / its read query alone p95: {page_p95 / query_p95:.1f}x")
    print(f"tasks page p95 / a static file p95:        {page_p95 / static_p95:.1f}x")

    if args.repeats < 1:
        return
    rounds = max(1, args.turns // 2)
    print(f"\nfan-out: {args.rooms} rooms x {args.turns} turns, 0 vs {args.pages} live pages")
    alone: list[float] = []
    watched: list[float] = []
    cpu: dict[bool, list[float]] = {False: [], True: []}
    for repeat in range(args.repeats):
        order = (0, args.pages) if repeat % 2 == 0 else (args.pages, 0)
        for pages in order:
            rate, turns, seen, cpu_ms = await engine_run(pages, args.rooms, rounds)
            (watched if pages else alone).append(rate)
            cpu[bool(pages)].append(cpu_ms)
            print(
                f"  run {repeat + 1}, {pages:>3} pages: {rate:>6.0f} turns/s, {cpu_ms:.2f} ms CPU"
                f" per turn ({turns} turns; {seen['events']} events, {seen['fetches']} part"
                " fetches by the pages)"
            )
    ratio = statistics.median(watched) / statistics.median(alone)
    print(
        f"median turns/s: {statistics.median(alone):.0f} with no page, "
        f"{statistics.median(watched):.0f} with {args.pages} pages: "
        f"{ratio:.2f}x ({(1 - ratio) * 100:+.1f} % slower; goal <= 5 %)"
    )
    cpu_alone, cpu_watched = statistics.median(cpu[False]), statistics.median(cpu[True])
    print(
        f"median CPU per turn of the bot's process: {cpu_alone:.2f} ms with no page, "
        f"{cpu_watched:.2f} ms with {args.pages} pages: {cpu_watched / cpu_alone:.2f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
