"""Orphan agents (issue 27 #13): a bot killed with SIGKILL in the middle of a local turn takes
the turn's processes along, and its spare runners (container/spares.py) too.

The bot (tests/container/programs/local_bot.py, the real LocalBackend) runs the real command
runner, whose check stands in for the agent CLI waiting on its model: a shell (the runner's
child) with a `sleep 1000` of its own. The test SIGKILLs the bot: the runner gets its
parent-death signal (container/parent_death.py) and ends the check's processes, so nothing of
the turn is left, where before they all lived on."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.container.test_local_checks import alive

pytestmark = pytest.mark.timeout(60)
REPO = Path(__file__).parents[2]
BOT = Path(__file__).parent / "programs" / "local_bot.py"


def _wait_for(path: Path, count: int, proc: subprocess.Popen[bytes]) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        words = path.read_text().split() if path.exists() else []
        if len(words) >= count:
            return [int(w) for w in words]
        assert proc.poll() is None, "the bot ended before its turn started"
        time.sleep(0.05)
    raise AssertionError(f"{path} never got {count} pids")


@pytest.mark.parametrize("on_a_spare", [False, True], ids=["fresh runner", "spare runner"])
def test_a_sigkilled_bot_leaves_no_runner_and_no_agent_running(
    tmp_path: Path, on_a_spare: bool
) -> None:
    pids = tmp_path / "pids"
    spares = tmp_path / "spares"
    # The check's shell writes the runner's pid ($PPID), its own, and its sleep's, then waits.
    command = f"sleep 1000 & echo $PPID $$ $! > {pids}.tmp; mv {pids}.tmp {pids}; wait"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, str(BOT), str(tmp_path), command]
    bot = subprocess.Popen([*argv, str(spares)] if on_a_spare else argv, env=env)
    started: list[int] = []
    try:
        started = _wait_for(pids, 3, bot)
        if on_a_spare:
            taken, waiting = _wait_for(spares, 2, bot)
            assert started[0] == taken  # the turn runs on the spare started ahead
            started.append(waiting)
        assert all(alive(pid) for pid in started)
        bot.send_signal(signal.SIGKILL)
        bot.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.05)
        names = ("the runner", "the check's shell", "its sleep", "the spare runner")
        left = [name for name, pid in zip(names, started, strict=False) if alive(pid)]
        assert left == [], f"outlived the bot: {', '.join(left)}"
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
        for pid in started:  # only what this test's turn started, should the test fail
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
