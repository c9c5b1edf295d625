"""LocalBackend supervision, driven through misbehaving runner programs (tests/fakes/bad_runners).

Every test checks that what the backend started is gone afterwards: the runner (our child) must
be reaped, not a zombie; its own children must not be running.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from container.limits import is_forbidden
from container.local import LocalBackend
from runners.protocol import (
    CRASHED,
    HARD_TIMEOUT,
    IDLE_TIMEOUT,
    OUTPUT_CAP,
    PROTOCOL,
    RunEvent,
    RunRequest,
    RunSpec,
)
from tests.fakes import bad_runners

pytestmark = pytest.mark.timeout(60)


def process_state(pid: int) -> str | None:
    """The /proc state letter of pid (R, S, Z, …), or None when no such process exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat[stat.rfind(b")") + 2 :].split()[0].decode()


def assert_gone(pids: list[int], *, reaped: list[int]) -> None:
    """`reaped`: our own children, which must not even be zombies. Others (grandchildren,
    re-parented to init once killed) may linger as zombies for a moment, never running."""
    for pid in reaped:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    deadline = time.monotonic() + 5
    for pid in pids:
        while process_state(pid) not in (None, "Z", "X") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_state(pid) in (None, "Z", "X"), f"pid {pid} survived the run"


def spec(tmp_path: Path, **overrides: Any) -> RunSpec:
    env = {"BAD_RUNNER_PIDS": str(tmp_path / "pids"), **overrides.pop("env", {})}
    fields: dict[str, Any] = {
        "group": "g1",
        "agent": "claude",
        "request": RunRequest(role="owner", prompt="do the thing"),
        "workspace": str(tmp_path),
        "env": env,
        "idle_timeout_s": 2.0,
        "hard_timeout_s": 20.0,
    }
    fields.update(overrides)
    return RunSpec(**fields)


def recorded_pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "pids"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


async def collect(backend: LocalBackend, run_spec: RunSpec) -> list[RunEvent]:
    return [event async for event in backend.run(run_spec)]


def bad(name: str, *args: str, **kw: Any) -> LocalBackend:
    return LocalBackend(command=bad_runners.command(name, *args), kill_grace_s=1.0, **kw)


async def test_crash_reports_exit_status_and_stderr_tail(tmp_path: Path) -> None:
    events = await collect(bad("crash"), spec(tmp_path))
    assert [e.kind for e in events] == ["progress", "error"]
    assert events[-1].code == CRASHED
    assert "exited with status 3" in events[-1].text
    assert "boom: something broke" in events[-1].text
    assert_gone([], reaped=recorded_pids(tmp_path))


async def test_hang_hits_idle_timeout_and_the_whole_group_dies(tmp_path: Path) -> None:
    started = time.monotonic()
    events = await collect(bad("hang"), spec(tmp_path, idle_timeout_s=1.0))
    elapsed = time.monotonic() - started
    assert [e.kind for e in events] == ["progress", "error"]
    assert events[-1].code == IDLE_TIMEOUT
    assert "no event for 1s" in events[-1].text
    # the idle limit plus at most the kill grace period, with room for a slow machine
    assert elapsed < 1.0 + 1.0 + 3.0
    runner, child = recorded_pids(tmp_path)
    assert_gone([child], reaped=[runner])


async def test_hard_timeout_fires_even_while_events_keep_coming(tmp_path: Path) -> None:
    backend = bad("slow", "1000", "0.1")
    events = await collect(backend, spec(tmp_path, idle_timeout_s=5.0, hard_timeout_s=1.0))
    assert events[-1].code == HARD_TIMEOUT
    assert {e.kind for e in events[:-1]} == {"progress"}
    assert_gone([], reaped=recorded_pids(tmp_path))


async def test_events_arrive_as_they_happen_not_at_the_end(tmp_path: Path) -> None:
    arrivals: list[tuple[float, RunEvent]] = []
    async for event in bad("slow", "3", "0.4").run(spec(tmp_path)):
        arrivals.append((time.monotonic(), event))
    assert [e.kind for _, e in arrivals] == ["progress"] * 3 + ["final"]
    # the first progress came well before the final: it was not buffered until exit
    assert arrivals[-1][0] - arrivals[0][0] > 0.8
    # and events spaced 0.4 s apart never tripped the 2 s idle limit


async def test_a_slow_consumer_does_not_count_as_runner_silence(tmp_path: Path) -> None:
    events = []
    async for event in bad("slow", "3", "0.01").run(spec(tmp_path, idle_timeout_s=0.5)):
        events.append(event)
        await asyncio.sleep(0.8)  # e.g. posting the event to a chat platform
    assert [e.kind for e in events] == ["progress"] * 3 + ["final"]


async def test_flood_hits_output_cap_and_is_killed(tmp_path: Path) -> None:
    events = await collect(bad("flood"), spec(tmp_path, max_output_bytes=200_000))
    assert events[-1].code == OUTPUT_CAP
    assert "200000 bytes" in events[-1].text
    assert all(e.kind == "progress" for e in events[:-1]) and len(events) > 10
    assert_gone([], reaped=recorded_pids(tmp_path))


async def test_one_endless_line_hits_the_line_cap(tmp_path: Path) -> None:
    backend = bad("long_line", max_line_bytes=100_000)
    events = await collect(backend, spec(tmp_path))
    assert [e.kind for e in events] == ["error"]
    assert events[0].code == OUTPUT_CAP
    assert "longer than 100000 bytes" in events[0].text
    assert_gone([], reaped=recorded_pids(tmp_path))


async def test_garbage_on_stdout_is_a_protocol_error_and_kills(tmp_path: Path) -> None:
    events = await collect(bad("garbage"), spec(tmp_path, idle_timeout_s=30.0))
    assert [e.kind for e in events] == ["progress", "error"]
    assert events[-1].code == PROTOCOL
    assert "not JSON" in events[-1].text and "just some text" in events[-1].text
    assert_gone([], reaped=recorded_pids(tmp_path))


async def test_a_runner_ignoring_sigterm_is_sigkilled(tmp_path: Path) -> None:
    started = time.monotonic()
    events = await collect(bad("ignore_sigterm"), spec(tmp_path, idle_timeout_s=0.5))
    assert events[-1].code == IDLE_TIMEOUT
    assert "ignored SIGTERM; SIGKILLed after 1s" in events[-1].text
    assert time.monotonic() - started >= 0.5 + 1.0  # it did wait the grace period first
    assert_gone([], reaped=recorded_pids(tmp_path))


async def test_exit_without_final_is_a_crash_even_with_status_0(tmp_path: Path) -> None:
    events = await collect(bad("no_final"), spec(tmp_path))
    assert [e.kind for e in events] == ["progress", "error"]
    assert events[-1].code == CRASHED and "exited with status 0" in events[-1].text


async def test_a_runner_that_never_reads_its_request_is_a_crash(tmp_path: Path) -> None:
    # A big request the runner never reads must not block the backend on a full pipe.
    request = RunRequest(role="owner", prompt="x" * 2_000_000)
    events = await collect(bad("silent_exit"), spec(tmp_path, request=request))
    assert [e.kind for e in events] == ["error"]
    assert events[0].code == CRASHED


async def test_answer_then_hang_keeps_the_answer_and_still_kills(tmp_path: Path) -> None:
    events = await collect(bad("final_then_hang"), spec(tmp_path, idle_timeout_s=0.5))
    assert [(e.kind, e.text) for e in events] == [("final", "DONE")]  # no error after a final
    assert_gone([], reaped=recorded_pids(tmp_path))


async def test_closing_the_iteration_kills_the_group(tmp_path: Path) -> None:
    run = bad("hang").run(spec(tmp_path, idle_timeout_s=30.0))
    first = await anext(run)
    assert first.kind == "progress"
    runner, child = recorded_pids(tmp_path)
    assert os.getpgid(runner) == runner  # it leads its own process group
    assert os.getpgid(child) == runner
    await run.aclose()  # type: ignore[attr-defined]
    assert_gone([child], reaped=[runner])


async def test_cancelling_the_consuming_task_kills_the_group(tmp_path: Path) -> None:
    seen: list[RunEvent] = []

    async def consume() -> None:
        async for event in bad("ignore_sigterm").run(spec(tmp_path, idle_timeout_s=30.0)):
            seen.append(event)

    task = asyncio.create_task(consume())
    while not seen:
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_gone([], reaped=recorded_pids(tmp_path))


async def test_a_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    events = await collect(bad("crash"), spec(tmp_path, workspace=str(tmp_path / "nope")))
    assert [e.kind for e in events] == ["error"]
    assert events[0].code == CRASHED and "could not start the runner" in events[0].text


async def test_platform_tokens_never_reach_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-secret")
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "discord-secret")
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/engine.sock")
    monkeypatch.setenv("SOME_HOST_SECRET", "host-only")
    monkeypatch.setenv("LANG", "C.UTF-8")
    backend = LocalBackend(
        command=bad_runners.command("env_dump"),
        env={"BACKEND_SETTING": "b", "DISCORD_BOT_TOKEN": "from-backend-env"},
    )
    run_spec = spec(
        tmp_path,
        env={"ANTHROPIC_API_KEY": "sk-run", "SLACK_BOT_TOKEN": "from-run-env"},
    )
    events = await collect(backend, run_spec)
    final = events[-1]
    assert final.kind == "final" and final.structured is not None
    env = final.structured["env"]
    assert not [name for name in env if name.startswith(("SLACK_", "DISCORD_", "DOCKER_"))]
    assert "SOME_HOST_SECRET" not in env
    assert env["LANG"] == "C.UTF-8" and env["PATH"] == os.environ["PATH"]
    assert env["BACKEND_SETTING"] == "b" and env["ANTHROPIC_API_KEY"] == "sk-run"
    # the runner works in the workspace, and is told so in its request
    assert final.structured["cwd"] == str(tmp_path)
    assert final.structured["request"]["cwd"] == str(tmp_path)


async def test_the_default_command_runs_python_m_runners(tmp_path: Path) -> None:
    # No agent behind it: `codex` may be missing here, so use an unknown module to see the
    # dispatch error travel through the backend as the runner's own error event.
    backend = LocalBackend(runner_module="runners")
    assert backend.argv(spec(tmp_path))[-4:] == ["-P", "-m", "runners", "claude"]
    events = await collect(LocalBackend(runner_module="no_such_runner_pkg"), spec(tmp_path))
    assert [e.kind for e in events] == ["error"]
    assert events[0].code == CRASHED and "No module named no_such_runner_pkg" in events[0].text


async def test_bad_request_line_gets_a_protocol_error_from_the_real_runner(
    tmp_path: Path,
) -> None:
    # The real `python -m runners claude` reading an empty stdin: it answers on stdout.
    proc = await asyncio.create_subprocess_exec(
        *LocalBackend().argv(spec(tmp_path)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=tmp_path,
    )
    out, _ = await proc.communicate(b"this is not json\n")
    assert proc.returncode == 2
    assert b'"code":"protocol"' in out and b"bad request" in out


@pytest.mark.parametrize(
    ("name", "forbidden"),
    [
        ("SLACK_BOT_TOKEN", True),
        ("SLACK_SIGNING_SECRET", True),
        ("discord_bot_token", True),
        ("DOCKER_HOST", True),
        ("MY_BOT_TOKEN", True),
        ("TEAMS_APP_TOKEN", True),
        ("ANTHROPIC_API_KEY", False),
        ("OPENAI_BASE_URL", False),
        ("TRIBUNAL_CODEX_SANDBOX", False),
        ("NOT_SLACK_THING", False),
    ],
)
def test_forbidden_variable_names(name: str, forbidden: bool) -> None:
    assert is_forbidden(name) is forbidden


def test_signal_names_in_crash_texts() -> None:
    from container.local import _exit_text

    assert _exit_text(-signal.SIGSEGV) == "was killed by SIGSEGV"
    assert _exit_text(1) == "exited with status 1"


@pytest.mark.parametrize("pythonpath", [":", "", "/nowhere:", "::/nowhere"])
async def test_a_runners_package_in_the_workspace_cannot_replace_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pythonpath: str
) -> None:
    """An empty PYTHONPATH entry means the current folder, which is the workspace: the host's
    PYTHONPATH does not reach the runner, so the real runner runs, not the workspace's."""
    forged = tmp_path / "runners"
    forged.mkdir()
    (forged / "__init__.py").write_text("")
    (forged / "__main__.py").write_text(
        'print(\'{"kind": "final", "text": "HIJACKED by the workspace"}\', flush=True)\n'
    )
    monkeypatch.setenv("PYTHONPATH", pythonpath)
    # The real codex runner, told of a binary that is not there: it fails fast, in its own words.
    run = spec(tmp_path, env={"CODEX_BIN": str(tmp_path / "no-codex")}).model_copy(
        update={"agent": "codex"}
    )
    events = await collect(LocalBackend(), run)
    assert "HIJACKED" not in str(events)
    assert events[-1].kind == "error" and "is not an executable file" in events[-1].text


PROGRAMS = Path(__file__).with_name("programs")


def unprivileged_runner(program: Path) -> LocalBackend:
    """The attack is by a process of the runner's own user without CAP_SYS_PTRACE, as every
    agent is in a container. As root, the runner (and so its agent) runs as nobody, on the
    system's Python (this venv's interpreter may live under a folder nobody cannot enter),
    importing the packages from this checkout and the venv's site-packages."""
    if os.geteuid() != 0:
        return LocalBackend(command=[sys.executable, "-P", str(program)], kill_grace_s=1.0)
    import pydantic

    paths = [str(Path(pydantic.__file__).parents[1]), str(Path(__file__).parents[2])]
    python = "/usr/bin/python3.11" if Path("/usr/bin/python3.11").exists() else "python3"
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    return LocalBackend(
        command=[*drop, python, "-P", str(program)],
        env={"PYTHONPATH": os.pathsep.join(paths)},
        kill_grace_s=1.0,
    )


async def test_an_agent_cannot_write_events_into_its_runners_pipe(tmp_path: Path) -> None:
    """The agent opens /proc/<runner>/fd/<n> and writes a forged APPROVED final: the runner is
    not dumpable, so it opens nothing, and the only answer is the runner's own."""
    backend = unprivileged_runner(PROGRAMS / "forging_runner.py")
    events = await collect(backend, spec(tmp_path, workspace=None, idle_timeout_s=30.0))
    finals = [e.text for e in events if e.kind == "final"]
    assert len(finals) == 1, events
    assert finals[0].startswith("CHANGES_REQUESTED\nopened: -"), finals[0]
    assert not [e for e in events if e.kind == "error"], events


async def test_a_runner_killed_after_a_final_fails_the_turn(tmp_path: Path) -> None:
    """Issue 24, item 18: an agent that can write into the runner's pipe writes a valid final
    reading APPROVED, then SIGKILLs the runner before its own answer can contradict it. The
    final went out, but the runner did not end as a runner does: the turn fails."""
    events = await collect(bad("forge_and_kill"), spec(tmp_path))
    assert [e.kind for e in events] == ["final", "error"], events
    assert events[1].code == CRASHED
    assert events[1].text == (
        "the runner was killed by SIGKILL after its final answer: the answer is not used"
    )


async def test_two_different_answers_are_a_protocol_error(tmp_path: Path) -> None:
    events = await collect(bad("two_answers", "different"), spec(tmp_path))
    assert [e.kind for e in events] == ["final", "error", "usage"]
    assert events[1].code == PROTOCOL
    assert "two different answers" in events[1].text


async def test_the_same_answer_twice_is_one_answer(tmp_path: Path) -> None:
    events = await collect(bad("two_answers", "same"), spec(tmp_path))
    assert [(e.kind, e.text) for e in events] == [("final", "APPROVED"), ("usage", "")]
