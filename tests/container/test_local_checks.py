"""The engine's checks (`python -m runners command`) on the LocalBackend: when the command
runner dies, whatever its checks started dies with it (issue 24 #16).

A check is an agent's text. Here it starts a background `sleep 1000` (its pid written to a file)
and then takes the runner down: SIGKILLs it (the runner's own cleanup never runs), or stops it
so the backend times it out and kills it. Nothing of the check may outlive the run."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from container.local import LocalBackend
from runners.protocol import CRASHED, IDLE_TIMEOUT, Check, RunEvent, RunRequest, RunSpec
from tests.container.test_local import process_state

pytestmark = pytest.mark.timeout(60)
REPO = Path(__file__).parents[2]

# Each starts `sleep 1000` in the background, writes its pid, then ends the runner ($PPID: the
# check's shell is the runner's child).
ATTACKS = {
    "background, then SIGKILL the runner": "sleep 1000 & echo $! > {pids}; kill -KILL $PPID",
    "double fork, then SIGKILL the runner": (
        "(sleep 1000 & echo $! > {pids}); kill -KILL $PPID; sleep 1000"
    ),
    "background, then stop the runner until it times out": (
        "sleep 1000 & echo $! > {pids}; kill -STOP $PPID; sleep 1000"
    ),
}


def alive(pid: int) -> bool:
    return process_state(pid) not in (None, "Z", "X")


def ours(pid: int) -> bool:
    """Whether `pid` is still the `sleep 1000` this test had started (not a reused pid)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x001000\x00"
    except OSError:
        return False


@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_a_check_that_takes_the_runner_down_leaves_nothing_running(
    tmp_path: Path, attack: str
) -> None:
    pids = tmp_path / "pids"
    check = Check(id="T1", command=ATTACKS[attack].format(pids=pids), timeout_s=300.0)
    request = RunRequest(role="executor", prompt="checks", checks=[check])
    spec = RunSpec(
        group="g",
        agent="command",
        request=request,
        workspace=str(tmp_path),
        idle_timeout_s=2.0,  # the stopped runner is silent: the backend times it out
        hard_timeout_s=60.0,
    )
    # This checkout's runners (the venv's editable install may be another checkout's).
    backend = LocalBackend(env={"PYTHONPATH": str(REPO)}, kill_grace_s=0.5)
    events: list[RunEvent] = [event async for event in backend.run(spec)]
    (pid,) = [int(p) for p in pids.read_text().split()]
    try:
        assert [e.kind for e in events][-1] == "error"
        assert events[-1].code == (IDLE_TIMEOUT if "times out" in attack else CRASHED)
        deadline = time.monotonic() + 10  # a SIGKILLed process may take a moment to go
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid), f"the check's background sleep {pid} outlived the run"
    finally:
        if ours(pid):  # only what this test started: the check's own process group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
