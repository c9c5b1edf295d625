"""Spare runners on the LocalBackend (container/spares.py, runners/warm.py), driven through the
real `python -m runners command` (no model): its check prints what the runner gave it.

A turn runs on the spare started ahead; the spare never holds a turn's environment before it is
given one, and takes the turn's whole environment then; a spare of another environment, a dead
or a hung one is dismissed and the turn still runs; spares count against `turns_at_once`; a
turn on a spare is stopped as any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from container.local import LocalBackend
from runners.protocol import Check, CheckReport, RunRequest, RunSpec
from tests.container.test_local import process_state

pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).parents[2]
SECRET = "TURN_SECRET"


def alive(pid: int) -> bool:
    return process_state(pid) not in (None, "Z", "X")


def local(**kw: Any) -> LocalBackend:
    """A LocalBackend of this checkout's runners, with one spare (as the bot's)."""
    return LocalBackend(env={"PYTHONPATH": str(REPO)}, kill_grace_s=0.5, **{"spares": 1, **kw})


def check_turn(workspace: Path, command: str, **env: str) -> RunSpec:
    check = Check(id="T1", command=command, timeout_s=60.0)
    return RunSpec(
        group="g",
        agent="command",
        request=RunRequest(role="executor", prompt="checks", checks=[check]),
        workspace=str(workspace),
        env={SECRET: "s3cret", **env},
        idle_timeout_s=30.0,
        hard_timeout_s=60.0,
    )


async def output(backend: LocalBackend, spec: RunSpec) -> str:
    """The check's output; the turn must end with its final."""
    events = [event async for event in backend.run(spec)]
    assert events[-1].kind == "final", events
    assert events[-1].structured is not None
    (result,) = CheckReport.model_validate(events[-1].structured).checks
    assert result.exit_status == 0, result
    return result.output_tail


async def runner_of(backend: LocalBackend, workspace: Path, **env: str) -> int:
    """The pid of the runner that ran a turn (the check's parent)."""
    return int(await output(backend, check_turn(workspace, "echo $PPID", **env)))


async def until(condition: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)
    return value


async def a_spare(backend: LocalBackend) -> int:
    (pid,) = await until(backend.spares.pids)
    return int(pid)


def environ(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


async def test_a_turn_runs_on_the_spare_started_ahead(tmp_path: Path) -> None:
    backend = local()
    try:
        first = await runner_of(backend, tmp_path)  # none yet: a runner of its own
        spare = await a_spare(backend)
        assert spare != first
        # Started with what every turn shares, never a turn's own variables.
        assert f"PYTHONPATH={REPO}".encode() in environ(spare)
        assert SECRET.encode() not in environ(spare)
        assert await runner_of(backend, tmp_path) == spare
        assert await a_spare(backend) != spare  # replaced
        assert not alive(spare)
    finally:
        await backend.close()


async def test_the_spare_takes_the_turns_environment_and_folder(tmp_path: Path) -> None:
    backend = local()
    work = tmp_path / "work"
    work.mkdir()
    try:
        await runner_of(backend, tmp_path)
        spare = await a_spare(backend)
        # A check sees only PATH of its runner's environment (runners/command.py check_env).
        path = f"{tmp_path}/bin:/usr/bin:/bin"
        seen = await output(backend, check_turn(work, "echo $PPID $PATH; pwd", PATH=path))
        assert seen.split() == [str(spare), path, str(work)]
    finally:
        await backend.close()


@pytest.mark.parametrize(
    "change",
    ["the backend's env", "a turn's interpreter variable", "the spare died", "the spare hung"],
)
async def test_a_spare_that_cannot_take_the_turn_is_dismissed(tmp_path: Path, change: str) -> None:
    backend = local(spare_ack_s=1.0)
    try:
        await runner_of(backend, tmp_path)
        spare = await a_spare(backend)
        env: dict[str, str] = {}
        if change == "the backend's env":
            backend.env["EXTRA"] = "changed"
        elif change == "a turn's interpreter variable":
            env["PYTHONHASHSEED"] = "7"
        elif change == "the spare died":
            os.kill(spare, signal.SIGKILL)
        else:
            os.kill(spare, signal.SIGSTOP)  # alive, but it never answers its setup
        started = time.monotonic()
        runner = await runner_of(backend, tmp_path, **env)
        assert runner != spare
        assert time.monotonic() - started < 20
        await until(lambda: not alive(spare), 10)
        replacement = await a_spare(backend)
        assert replacement not in (spare, runner)
        if change == "the backend's env":
            assert b"EXTRA=changed" in environ(replacement)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(spare, signal.SIGKILL)
        await backend.close()


async def test_stopping_a_turn_on_a_spare_ends_all_of_it(tmp_path: Path) -> None:
    backend = local()
    pids = tmp_path / "pids"
    try:
        await runner_of(backend, tmp_path)
        spare = await a_spare(backend)
        spec = check_turn(
            tmp_path, f"sleep 1000 & echo $PPID $! > {pids}.tmp; mv {pids}.tmp {pids}; wait"
        )
        async with contextlib.aclosing(backend.run(spec)) as events:  # type: ignore[type-var]
            await anext(events)
            runner, sleeper = map(int, (await until(pids.exists) and pids.read_text()).split())
            assert runner == spare and alive(sleeper)
        # Closing the iteration (a cancelled turn) stopped the runner and what it started.
        await until(lambda: not alive(sleeper) and not alive(spare), 10)
    finally:
        await backend.close()


async def test_a_turn_stopped_during_the_hand_over_takes_its_spare_along(
    tmp_path: Path,
) -> None:
    backend = local(spare_ack_s=30.0)
    try:
        await runner_of(backend, tmp_path)
        spare = await a_spare(backend)
        os.kill(spare, signal.SIGSTOP)  # the hand-over waits for its answer
        turn = asyncio.ensure_future(runner_of(backend, tmp_path))
        await asyncio.sleep(0.5)
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        await until(lambda: not alive(spare), 10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(spare, signal.SIGKILL)
        await backend.close()
    await runner_of(backend, tmp_path)  # a closed backend still runs turns, with no spare
    await asyncio.sleep(0.2)
    assert backend.spares.count == 0


async def test_spares_count_against_turns_at_once(tmp_path: Path) -> None:
    cap, turns = 3, 12
    backend = local(turns_at_once=cap)
    me = os.getpid()
    most = 0
    done = asyncio.Event()

    def children() -> set[int]:
        found = set()
        for entry in os.listdir("/proc"):
            with contextlib.suppress(OSError, ValueError):
                stat = Path(f"/proc/{entry}/stat").read_bytes()
                fields = stat[stat.rfind(b")") + 2 :].split()
                if int(fields[1]) == me and fields[0] not in (b"Z", b"X"):
                    found.add(int(entry))
        return found

    before = children()  # of earlier tests in this process, if any

    def runners() -> int:
        """Our children since the test started: every runner process, spares included."""
        return len(children() - before)

    async def sample() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, runners())
            await asyncio.sleep(0.01)

    sampler = asyncio.create_task(sample())
    try:
        spec = check_turn(tmp_path, "sleep 0.2")
        results = await asyncio.gather(*(output(backend, spec) for _ in range(turns)))
        assert len(results) == turns
        await a_spare(backend)  # one waits for the next turn, no more
        await asyncio.sleep(0.3)
        assert backend.spares.count == 1
    finally:
        done.set()
        await sampler
        await backend.close()
    assert most <= cap, f"{most} runner processes at once, the cap is {cap}"
    assert runners() == 0  # closed: no spare left


async def test_no_spares_unless_asked_for(tmp_path: Path) -> None:
    backend = LocalBackend(env={"PYTHONPATH": str(REPO)})
    await runner_of(backend, tmp_path)
    await asyncio.sleep(0.2)
    assert backend.spares.count == 0


def test_a_negative_number_of_spares_is_refused() -> None:
    with pytest.raises(ValueError, match="fewer than 0"):
        local(spares=-1)


async def test_a_command_set_later_dismisses_the_spare(tmp_path: Path) -> None:
    """A test's own `command` never meets a spare: one started before it was set is dismissed,
    so it does not sit beside the command's runners under the cap."""
    backend = local()
    try:
        await runner_of(backend, tmp_path)
        spare = await a_spare(backend)
        backend.command = [sys.executable, "-P", "-m", "runners"]
        assert await runner_of(backend, tmp_path) != spare
        assert not alive(spare) and backend.spares.count == 0
    finally:
        await backend.close()
