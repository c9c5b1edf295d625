"""Crash and restart: an engine process is killed with SIGKILL in the middle of an owner turn,
with a post stuck in its outbox; a new process resumes the task from the database."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


async def _spawn(
    mode: str, db: Path, log: Path, ready: Path, out: Path
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.fakes.crash_child",
        mode,
        str(db),
        str(log),
        str(ready),
        cwd=REPO,
        stdout=out.open("wb"),
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )


async def _wait_for_file(path: Path, proc: asyncio.subprocess.Process, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not path.exists():
            if proc.returncode is not None:
                raise AssertionError(f"the child exited early with {proc.returncode}")
            await asyncio.sleep(0.05)


async def test_sigkill_mid_turn_then_restart_finishes_and_posts_everything_once(
    tmp_path: Path,
) -> None:
    db, log = tmp_path / "tribunal.db", tmp_path / "deliveries.jsonl"
    ready1, ready2 = tmp_path / "ready1", tmp_path / "ready2"
    child = await _spawn("first", db, log, ready1, tmp_path / "first.out")
    try:
        await _wait_for_file(ready1, child, timeout=60)
    except BaseException:
        print((tmp_path / "first.out").read_text())
        raise
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # its own session: nothing of it survives
        await child.wait()
    assert child.returncode == -signal.SIGKILL

    # What the dead process left: the owner's second turn running, the reviewer's post pending.
    raw = sqlite3.connect(db)
    turns_before = raw.execute(
        "SELECT seq, role, status, output FROM turns ORDER BY seq"
    ).fetchall()
    pending = raw.execute("SELECT id, persona FROM outbox WHERE status='pending'").fetchall()
    raw.close()
    assert turns_before == [
        (1, "owner", "done", "DONE\nfirst version"),
        (2, "reviewer", "done", "CHANGES_REQUESTED\n- add a test for the empty case"),
        (3, "owner", "running", ""),
    ]
    assert [persona for _, persona in pending] == ["reviewer"]

    second = await _spawn("resume", db, log, ready2, tmp_path / "resume.out")
    try:
        async with asyncio.timeout(90):
            await second.wait()
    finally:
        if second.returncode is None:
            os.killpg(second.pid, signal.SIGKILL)
            await second.wait()
    assert second.returncode == 0, (tmp_path / "resume.out").read_text()

    raw = sqlite3.connect(db)
    task = raw.execute("SELECT status FROM tasks WHERE id=1").fetchone()
    turns = raw.execute("SELECT seq, role, status, output FROM turns ORDER BY seq").fetchall()
    outbox = raw.execute("SELECT id, status FROM outbox ORDER BY id").fetchall()
    raw.close()
    assert task == ("closed",)
    # No stored output was lost; the interrupted turn ran again as a new turn.
    assert turns[:2] == turns_before[:2]
    assert [(seq, role, status) for seq, role, status, _ in turns] == [
        (1, "owner", "done"),
        (2, "reviewer", "done"),
        (3, "owner", "interrupted"),
        (4, "owner", "done"),
        (5, "reviewer", "done"),
        (6, "owner", "done"),
    ]
    assert turns[3][3] == "DONE\nsecond version, with the test"
    assert all(status == "sent" for _, status in outbox)

    # Every outbox message was posted exactly once across both processes, in order.
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    posted = [line["outbox_id"] for line in lines if line["outbox_id"]]
    assert Counter(posted) == Counter(row_id for row_id, _ in outbox)
    assert all(n == 1 for n in Counter(posted).values())
    assert posted == sorted(posted)
    texts = [line["text"] for line in lines if line["outbox_id"]]
    assert "CHANGES_REQUESTED\n- add a test for the empty case" in texts
    assert texts[-1] == "✅ Task #1 is done and closed."
