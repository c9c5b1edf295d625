"""DockerBackend against a real engine (Podman), with protocol-speaking test runner programs.

Acceptance criteria of the Docker backend: mounts per role, no platform token in a container,
limits that kill (memory, idle, hard, output) with the reason on the error event, the runner
chosen per exec from spec.agent, and the per-room order under the runner-slot cap
(container/slots.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from container.slots import TurnSlots
from runners.protocol import (
    CRASHED,
    HARD_TIMEOUT,
    IDLE_TIMEOUT,
    OUT_OF_MEMORY,
    OUTPUT_CAP,
    PROTOCOL,
)
from tests.container.conftest import MakeBackend, collect, spec

pytestmark = [pytest.mark.engine, pytest.mark.timeout(180)]


def finals(events: list[Any]) -> list[str]:
    return [e.text for e in events if e.kind == "final"]


def errors(events: list[Any]) -> list[tuple[str | None, str]]:
    return [(e.code, e.text) for e in events if e.kind == "error"]


async def test_owner_writes_the_workspace_reviewer_cannot(
    make_backend: MakeBackend, workspace: Path
) -> None:
    backend = make_backend()
    owner = await collect(backend, spec("write /workspace/owner.txt by-owner", workspace=workspace))
    assert finals(owner) == ["wrote /workspace/owner.txt"]
    assert (workspace / "owner.txt").read_text() == "by-owner"

    reviewer = await collect(
        backend, spec("write /workspace/reviewer.txt nope", role="reviewer", workspace=workspace)
    )
    assert finals(reviewer) == []
    [(code, text)] = errors(reviewer)
    assert code == "agent" and "Read-only file system" in text
    assert not (workspace / "reviewer.txt").exists()
    # The reviewer still reads what the owner wrote.
    arbiter = await collect(backend, spec("echo ok", role="arbiter", workspace=workspace))
    assert finals(arbiter) == ["ok"]


async def test_runner_is_chosen_per_exec_from_the_agent(make_backend: MakeBackend) -> None:
    backend = make_backend()
    for agent in ("claude", "codex", "codex", "claude"):
        events = await collect(backend, spec("echo hi", agent=agent))
        sessions = [e for e in events if e.kind == "session"]
        assert [e.text for e in sessions] == [f"runner {agent}"]
        assert finals(events) == ["hi"]
    # All four turns ran in the one container of (g1, owner).
    assert len(backend.pool.listed()) == 1


async def test_platform_tokens_never_enter_a_container(
    make_backend: MakeBackend, monkeypatch: pytest.MonkeyPatch, docker_client: Any
) -> None:
    secrets = {
        "SLACK_BOT_TOKEN": "xoxb-secret-slack-bot",
        "SLACK_APP_TOKEN": "xapp-secret-slack-app",
        "SLACK_SIGNING_SECRET": "secret-signing",
        "DISCORD_BOT_TOKEN": "secret-discord-bot",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)  # in the bot's own environment...
    backend = make_backend()
    run_env = {**secrets, "ANTHROPIC_API_KEY": "sk-ant-model-key", "DOCKER_HOST": "unix:///x"}
    events = await collect(backend, spec("env", env=run_env))  # ...and offered to the run
    [final] = [e for e in events if e.kind == "final"]
    seen = final.structured or {}
    assert seen["ANTHROPIC_API_KEY"] == "sk-ant-model-key"  # model credentials do pass
    assert not set(secrets) & set(seen) and "DOCKER_HOST" not in seen

    [container] = backend.pool.listed()
    container = docker_client.containers.get(container.id)
    assert not set(secrets) & {v.split("=", 1)[0] for v in container.attrs["Config"]["Env"]}
    pattern = "|".join(secrets.values())
    # Every process's environment (init, the idle sleep, this shell) and the writable places.
    probe = (
        f"cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -E '{pattern}'; "
        f"grep -rlE '{pattern}' /tmp /home /workspace /etc /opt 2>/dev/null; true"
    )
    code, output = container.exec_run(["sh", "-c", probe])
    assert code == 0 and output.strip() == b"", output
    # A plain exec's own environment holds none either.
    code, output = container.exec_run(["env"])
    assert not any(value.encode() in output for value in secrets.values())


async def test_memory_hog_is_killed_as_out_of_memory(make_backend: MakeBackend) -> None:
    backend = make_backend(mem_limit="128m")
    events = await collect(backend, spec("hog 1024"))
    [(code, text)] = errors(events)
    assert code == OUT_OF_MEMORY and "128m" in text
    assert finals(events) == []
    # The container survives its runner's OOM and serves the next turn.
    assert finals(await collect(backend, spec("echo after"))) == ["after"]


async def test_an_agent_child_killed_by_the_memory_limit_is_out_of_memory(
    make_backend: MakeBackend,
) -> None:
    # The agent CLI (a child of the runner) is what grows; the OOM killer picks it, the runner
    # survives and reports a failure of its own, which the backend names for what it was.
    backend = make_backend(mem_limit="128m")
    events = await collect(backend, spec("oomchild 1024"))
    [(code, text)] = errors(events)
    assert code == OUT_OF_MEMORY and "the agent CLI died with status -9" in text
    # The counter moved once: a later plain agent error passes through unchanged.
    events = await collect(backend, spec("write /proc/nope x"))
    [(code, text)] = errors(events)
    assert code == "agent" and text.startswith("write failed")


async def test_idle_runner_is_killed(make_backend: MakeBackend, docker_client: Any) -> None:
    backend = make_backend()
    events = await collect(backend, spec("hang", idle_timeout_s=1.5))
    assert [e.kind for e in events] == ["session", "progress", "error"]
    [(code, text)] = errors(events)
    assert code == IDLE_TIMEOUT and "1.5s" in text
    assert _runner_processes(docker_client, backend) == []


async def test_events_reset_the_idle_timer_until_the_hard_timeout(
    make_backend: MakeBackend,
) -> None:
    backend = make_backend()
    # Progress every 0.5 s keeps it under the 1.5 s idle limit; the 3 s wall limit ends it.
    events = await collect(backend, spec("slow 100 0.5", idle_timeout_s=1.5, hard_timeout_s=3))
    progress = [e for e in events if e.kind == "progress"]
    assert len(progress) >= 4
    [(code, _)] = errors(events)
    assert code == HARD_TIMEOUT
    # Within the limits the same program completes.
    done = await collect(backend, spec("slow 3 0.2", idle_timeout_s=1.5, hard_timeout_s=10))
    assert finals(done) == ["slow done"]


async def test_silence_longer_than_the_client_timeout_is_not_an_end(
    make_backend: MakeBackend, docker_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The exec's socket inherits the docker client's request timeout (here 2 s), which must not
    # cut a quiet runner short: only the idle timeout (10 s) may. The short timeout is in force
    # only while the exec starts: the engine's other calls keep theirs, so a loaded machine's
    # slow API answer is not mistaken for the bug.
    api = docker_client.api
    start = api.exec_start

    def exec_start(*args: Any, **kwargs: Any) -> Any:
        saved, api.timeout = api.timeout, 2
        try:
            return start(*args, **kwargs)
        finally:
            api.timeout = saved

    monkeypatch.setattr(api, "exec_start", exec_start)
    events = await collect(make_backend(), spec("slow 1 4.5", idle_timeout_s=10))
    assert finals(events) == ["slow done"]


async def test_output_flood_is_capped(make_backend: MakeBackend, docker_client: Any) -> None:
    backend = make_backend()
    events = await collect(backend, spec("flood", max_output_bytes=200_000))
    [(code, text)] = errors(events)
    assert code == OUTPUT_CAP and "200000" in text
    shown = sum(len(e.text) for e in events if e.kind == "progress")
    assert 0 < shown <= 200_000
    assert _runner_processes(docker_client, backend) == []


async def test_garbage_on_stdout_is_a_protocol_error(make_backend: MakeBackend) -> None:
    events = await collect(make_backend(), spec("garbage", idle_timeout_s=30))
    [(code, text)] = errors(events)
    assert code == PROTOCOL and "not an event" in text


async def test_a_runner_killed_after_its_final_fails_the_turn(make_backend: MakeBackend) -> None:
    """Issue 24, item 18: a final, then the runner dies by SIGKILL (status 137): the final
    went out, but the turn fails after it."""
    events = await collect(make_backend(), spec("forgekill"))
    assert finals(events) == ["APPROVED\nforged"]
    assert errors(events) == [
        (
            CRASHED,
            "the runner exited with status 137 after its final answer: the answer is not used",
        )
    ]
    assert events[-1].kind == "error"


async def test_crash_reports_status_and_stderr(make_backend: MakeBackend) -> None:
    events = await collect(make_backend(), spec("crash"))
    [(code, text)] = errors(events)
    assert code == CRASHED and "status 3" in text and "something broke" in text


async def test_missing_runner_program_is_a_crash_not_an_exception(
    make_backend: MakeBackend,
) -> None:
    backend = make_backend(command=("python3", "/opt/test-runners/no_such_runner.py"))
    [(code, text)] = errors(await collect(backend, spec("echo hi")))
    assert code == CRASHED and "no_such_runner.py" in text


async def test_a_runner_that_fails_at_once_still_says_why(make_backend: MakeBackend) -> None:
    # Podman loses the output of an exec that ends before its attach is connected (podman#11446):
    # under load, one quick exit in two or three came back as "read unixpacket …: connection
    # reset by peer" instead of Python's message. The wrapper waits for a line on stdin first.
    backend = make_backend(command=("python3", "/opt/test-runners/no_such_runner.py"))
    for _ in range(12):
        [(code, text)] = errors(await collect(backend, spec("echo hi")))
        assert code == CRASHED and "No such file or directory" in text, text


async def test_stray_processes_of_a_killed_run_are_swept(
    make_backend: MakeBackend, docker_client: Any, workspace: Path
) -> None:
    backend = make_backend()
    events = await collect(
        backend, spec("spawn /workspace/stray.txt", workspace=workspace, idle_timeout_s=1)
    )
    assert errors(events)[0][0] == IDLE_TIMEOUT
    # The detached child (it writes after 2 s) is gone from the container, so it never writes:
    # decided by the process table, not by waiting for a write that does not come.
    assert _runner_processes(docker_client, backend) == []
    assert not (workspace / "stray.txt").exists()


async def test_cancelling_the_iteration_kills_the_run(
    make_backend: MakeBackend, docker_client: Any
) -> None:
    backend = make_backend()
    stream = backend.run(spec("hang", idle_timeout_s=60))
    kinds = [(await anext(stream)).kind, (await anext(stream)).kind]
    assert kinds == ["session", "progress"]
    await stream.aclose()
    assert _runner_processes(docker_client, backend) == []
    # The room is free again: the next turn runs.
    assert finals(await collect(backend, spec("echo next"))) == ["next"]


async def test_turns_of_a_room_run_in_order_and_rooms_in_parallel(
    make_backend: MakeBackend,
) -> None:
    backend = make_backend()
    order: list[str] = []

    async def turn(group: str, label: str, prompt: str) -> None:
        async for event in backend.run(spec(prompt, group=group)):
            if event.kind == "final":
                order.append(label)

    loop = asyncio.get_running_loop()
    started = loop.time()
    # Room a: a slow turn then a quick one; the quick one must wait. Room b runs meanwhile.
    first = asyncio.create_task(turn("room-a", "a1", "slow 4 0.4"))
    await asyncio.sleep(0.05)
    second = asyncio.create_task(turn("room-a", "a2", "echo quick"))
    other = asyncio.create_task(turn("room-b", "b1", "echo other"))
    await asyncio.gather(first, second, other)
    assert order.index("a1") < order.index("a2")
    assert order.index("b1") < order.index("a1")  # room b did not queue behind room a
    assert loop.time() - started < 30


async def test_global_concurrency_limit_queues_extra_rooms(make_backend: MakeBackend) -> None:
    backend = make_backend()
    backend.slots = TurnSlots(2)
    running = peak = 0
    queued: list[str] = []

    async def turn(group: str) -> None:
        nonlocal running, peak
        async for event in backend.run(spec("slow 3 0.3", group=group)):
            if event.kind == "queued":
                queued.append(group)
            if event.kind == "session":
                running += 1
                peak = max(peak, running)
            if event.kind == "final":
                running -= 1

    await asyncio.gather(*(turn(f"room-{i}") for i in range(4)))
    assert peak == 2
    assert len(queued) == 2  # the two past the cap said they wait for a runner slot


def _runner_processes(docker_client: Any, backend: Any) -> list[str]:
    """Processes left in the backend's containers besides init and the idle sleep."""
    left: list[str] = []
    for listed in backend.pool.listed():
        container = docker_client.containers.get(listed.id)
        script = (
            "for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null); "
            'echo "${p#/proc/} $c"; done'
        )
        _, output = container.exec_run(["sh", "-c", script])
        for line in output.decode().splitlines():
            pid, _, cmd = line.partition(" ")
            ours = "/proc/[0-9]*" in cmd or cmd.startswith("tr ")  # this probe itself
            if pid != "1" and cmd.strip() not in ("sleep infinity", "") and not ours:
                left.append(line)
    return left


async def test_an_agent_cannot_write_events_into_its_runners_pipe(
    make_backend: MakeBackend,
) -> None:
    """The runner on the real plumbing (runners._io) in the real image; its agent child opens
    /proc/<runner>/fd/<n> to write a forged APPROVED final. The runner is not dumpable and the
    agent has no capabilities, so it opens nothing and the only answer is the runner's own."""
    backend = make_backend(command=("python3", "-P", "/opt/test-runners/forging_runner.py"))
    events = await collect(backend, spec("attack", role="reviewer"))
    assert [e.text.split("\n")[:2] for e in events if e.kind == "final"] == [
        ["CHANGES_REQUESTED", "opened: -"]
    ]
    assert errors(events) == []
