"""Several engine processes on one PostgreSQL database (issue 19): fifty tasks in flight shared
by three processes (tests/fakes/fleet_child.py); the one with the most turns running is killed
with SIGKILL in the middle of them. Every turn runs exactly once (a turn cut short by the kill is
marked interrupted and the next one runs elsewhere), the dead engine's tasks are taken over
within a lease of the kill (the engines keep the default 30 s scan: the takeover comes from
watching the leases' ends, told by LISTEN/NOTIFY), and every outbox row is posted exactly once,
counted at the processes' platforms.

The kill comes while the victim's platform calls hang (FOLDER/<victim>.freeze, as in
tests/rooms/test_crash.py): a post the platform accepted but the store never heard of would be
posted again by the engine that takes the row over; no chat API lets a bot make that window
disappear (Slack has no idempotency key), so the test does not claim to.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path

from rooms.base.model import RoomRef
from rooms.base.records import OutboxDraft
from rooms.store import Store
from tests.fakes.postgres import Server

TASKS = 50
ENGINES = ["E0", "E1", "E2"]
TURN_S = 0.4
LEASE_S = 2.0
STORY = ["owner", "reviewer", "owner", "reviewer", "owner"]
ROOT = Path(__file__).resolve().parents[2]


def _lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def _start(url: str, engine_id: str, folder: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.fakes.fleet_child", url, engine_id, str(folder),
        str(TURN_S), str(LEASE_S),
        cwd=ROOT, start_new_session=True,
        stdout=asyncio.subprocess.DEVNULL, stderr=open(folder / f"{engine_id}.log", "wb"),  # noqa: SIM115
    )  # fmt: skip


async def _until(check, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_three_engines_on_postgres_share_fifty_tasks_and_survive_a_sigkill(
    postgres: Server, tmp_path: Path
) -> None:
    url = postgres.fresh_url()
    store = await Store.open(url)
    procs = {e: await _start(url, e, tmp_path) for e in ENGINES}
    try:
        await _until(
            lambda: _true(all((tmp_path / f"{e}.ready").exists() for e in ENGINES)), 60, "ready"
        )
        # Opened once every engine listens: each task's notification wakes all three, and
        # whichever claims its lease first drives it.
        for n in range(TASKS):
            room = RoomRef("test", "C1", f"T{n}")
            draft = OutboxDraft(f"ack:{room.thread}", room, "opened")
            await store.open_task(room, "g", f"task {n}", "alice", time.time(), outbox=[draft])

        def running(engine: str) -> set[tuple[str, str]]:
            lines = _lines(tmp_path / f"{engine}.turns")
            started = {tuple(x["start"]) for x in lines if "start" in x}  # type: ignore[arg-type]
            ended = {tuple(x["end"]) for x in lines if "end" in x}  # type: ignore[arg-type]
            return started - ended  # type: ignore[return-value]

        # The victim: the engine with the most turns running, once one has three running and
        # has finished some (it is mid-way, not starting).
        victim = ""

        async def mid_way() -> bool:
            nonlocal victim
            for engine in sorted(ENGINES, key=lambda e: -len(running(e))):
                ended = '"end"' in _text(tmp_path / f"{engine}.turns")
                if len(running(engine)) >= 3 and ended:
                    victim = engine
                    return True
            return False

        await _until(mid_way, 60, "an engine mid-way")
        (tmp_path / f"{victim}.freeze").touch()  # its next platform call hangs
        await asyncio.sleep(0.5)  # the posts already accepted are marked sent meanwhile
        assert running(victim), "the kill must land mid-turn"
        killed_at = time.time()
        os.killpg(procs[victim].pid, signal.SIGKILL)
        assert await procs[victim].wait() == -signal.SIGKILL
        # What it left unfinished, read once it is dead: a turn can still end (and be stored)
        # in the instant between a look before the kill and the kill itself. The runner
        # writes a turn's end before the engine has its final (tests/fakes/fleet_child.py).
        cut_short = running(victim)
        assert cut_short, "the kill must land mid-turn"

        async def finished() -> bool:
            open_tasks = await store.open_tasks()
            return not open_tasks and await store.count_pending() == 0

        await _until(finished, 120, "every task closed and every post delivered")
    finally:
        for proc in procs.values():
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()

    try:
        # Every turn ran exactly once, across the three processes.
        starts = Counter(
            (engine, tuple(x["start"]))  # type: ignore[arg-type]
            for engine in ENGINES
            for x in _lines(tmp_path / f"{engine}.turns")
            if "start" in x
        )
        per_turn = Counter(turn for _, turn in starts)
        assert set(per_turn.values()) == {1}, per_turn.most_common(3)
        by_engine = Counter(engine for engine, _ in starts)
        assert all(by_engine[e] > 0 for e in ENGINES), by_engine  # the work was shared

        taken_over = 0
        for task in range(1, TASKS + 1):
            turns = await store.turns(task)
            assert [t.role for t in turns if t.status == "done"] == STORY
            assert {t.status for t in turns} <= {"done", "interrupted"}
            for t in turns:
                if (str(task), str(t.seq)) in cut_short:
                    assert t.status == "interrupted"  # the victim's, cut short by the kill
                    after = [u for u in turns if u.seq > t.seq]
                    assert after, "the task went on"
                    # on another engine, once E0's lease had ended (a lease, plus the scan's
                    # margin and a loaded machine's slack)
                    assert after[0].started_at - killed_at < LEASE_S + 5.0
                    taken_over += 1
        assert taken_over == len(cut_short)

        # Every outbox row posted exactly once, counted at the platforms of all three.
        posted = Counter(
            int(x["outbox_id"])  # type: ignore[call-overload]
            for engine in ENGINES
            for x in _lines(tmp_path / f"{engine}.posts")
            if x["outbox_id"]
        )
        rows = await store.outbox()
        assert {r.id for r in rows} == set(posted)
        assert set(posted.values()) == {1}, posted.most_common(3)
        assert all(r.status == "sent" for r in rows)
    finally:
        await store.close()


async def _true(value: bool) -> bool:
    return value


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""
