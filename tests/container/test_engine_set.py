"""Runners on two container engines (container/engine_set.py): two real Podman services.

Engine A is the session's engine (tests/container/conftest.py); engine B is a second Podman
service with its own container storage and state (tests/fakes/podman.py `private_engine`: it
neither sees nor touches A's containers), reading the runner image from A's image store. B is
listed first, so it takes the first turn when both are idle. One B serves every test of the
module (started once: these are the suite's slowest tests).

- Placement: two tasks running at once land on the two engines (by load); a task's later turns
  stay on its engine while its containers live there, also when that engine is the busier one
  or when both are idle.
- `tribunal doctor` checks every engine: each usable one ran a container that saw the data
  folder; one that does not answer is named as drained, and the set is still usable.
- The bot's wiring: settings with `engines` → `running_backend` → an EngineSet behind the
  credential proxy; a check (the engine's own `command` runner, the real one in the image) runs
  in a container on the first engine; on exit no container of the bot is left on either.
- Failover: a pair task whose owner turn runs on B when B's service is killed: the turn ends as
  interrupted, runs again on A, and the task finishes; `status` names B as drained. Once B
  answers again, the health check puts it back in service.
- A hung engine (its service frozen with SIGSTOP: it neither answers nor closes its streams) is
  found by the health check: the turn running on it ends at once as `engine_lost`, without
  waiting for its idle timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import bot.platforms  # noqa: F401  (the settings read the platforms' declarations)
from bot.backend import running_backend
from bot.doctor.engines import check_engines
from bot.settings import load_settings
from container.docker_backend import DockerBackend
from container.docker_pool import MANAGED, WORKSPACE_LABEL, DockerConfig
from container.endpoints import Endpoint
from container.engine_set import EngineSet, engine_notes
from container.podman_service import PodmanService
from rooms.base.model import GroupPolicy
from runners.protocol import Check, RunRequest, RunSpec
from tests.container.conftest import FAKE_RUNNER, PROGRAMS, collect, spec
from tests.container.test_bot_docker import docker_host_of
from tests.fakes.engine_kit import ROOM, engine_kit
from tests.fakes.podman import private_engine, unmount_under

pytestmark = [pytest.mark.engine, pytest.mark.timeout(240)]

PAIR_RUNNER = ("python3", "/opt/test-runners/pair_runner.py")
MARK = ".first-owner-turn"


@dataclass
class Pair:
    a_host: str
    b: PodmanService


@pytest.fixture(scope="module")
def engine_pair(
    docker_client: Any, runner_image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    folder = tmp_path_factory.mktemp("engine-b")
    b = private_engine(folder).start()
    try:
        yield Pair(docker_host_of(docker_client), b)
    finally:
        # Everything on B is these tests' (its storage is theirs alone): nothing may outlive it,
        # also after a failed test.
        with contextlib.suppress(Exception):
            client = Endpoint(b.docker_host).connect(timeout=60)
            for container in client.containers.list(all=True):
                container.remove(force=True)
            client.close()
        b.stop()
        unmount_under(folder)


MakeSet = Callable[..., EngineSet]


@pytest.fixture
async def make_set(engine_pair: Pair, runner_image: str) -> AsyncIterator[MakeSet]:
    made: list[tuple[EngineSet, str]] = []

    def make(command: tuple[str, ...], **options: Any) -> EngineSet:
        instance = f"test-{uuid.uuid4().hex[:10]}"
        config = DockerConfig(
            image=runner_image,
            instance=instance,
            mem_limit="256m",
            extra_mounts={str(PROGRAMS): "/opt/test-runners"},
        )
        parts = []
        for host in (engine_pair.b.docker_host, engine_pair.a_host):
            endpoint = Endpoint(host)
            parts.append((endpoint, DockerBackend(endpoint.connect(), config, command=command)))
        engines = EngineSet(parts, **options)
        made.append((engines, instance))
        return engines

    yield make
    for engines, instance in made:
        await engines.close()
        for engine in engines.engines:
            label = {"label": [f"{MANAGED}=1", f"tribunal.instance={instance}"]}
            left = engine.backend.client.containers.list(all=True, filters=label)
            for container in left:
                container.remove(force=True)
            engine.backend.client.close()
            assert not left, f"containers left on {engine.name}: {[c.name for c in left]}"


def workspace(tmp_path: Path, name: str) -> Path:
    """A workspace the container user (uid 1000) may write to."""
    folder = tmp_path / name
    folder.mkdir()
    os.chown(folder, 1000, 1000)
    return folder


def on(engines: EngineSet, which: int) -> set[str]:
    """The workspaces of the containers engine `which` (0: B, 1: A) holds for the set."""
    client = engines.engines[which].backend.client
    found = client.containers.list(all=True, filters={"label": f"{MANAGED}=1"})
    instance = engines.engines[which].backend.config.instance
    return {
        c.labels[WORKSPACE_LABEL] for c in found if c.labels.get("tribunal.instance") == instance
    }


async def until(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.05)


async def test_tasks_spread_by_load_and_a_tasks_turns_stay_on_its_engine(
    make_set: MakeSet, tmp_path: Path
) -> None:
    engines = make_set(FAKE_RUNNER)
    await engines.start()
    b, a = engines.engines
    one, two = workspace(tmp_path, "one"), workspace(tmp_path, "two")
    key_one, key_two = ("g1", str(one)), ("g1", str(two))

    # Task one's owner turn runs a while: both engines idle, so B (listed first) takes it.
    first = asyncio.create_task(collect(engines, spec("slow 8 0.5", workspace=one)))
    await until(lambda: b.active == 1)
    # Task two meanwhile: B is loaded, A is not.
    events = await collect(engines, spec("echo two", workspace=two))
    assert [e.text for e in events if e.kind == "final"] == ["two"]
    assert engines.engine_of(key_two) is a
    # Task one's reviewer while its owner still runs: on B, the busier engine, with its task.
    events = await collect(engines, spec("echo one", role="reviewer", workspace=one))
    assert [e.text for e in events if e.kind == "final"] == ["one"]
    assert engines.engine_of(key_one) is b
    assert not first.done()
    assert [e.kind for e in await first][-1] == "final"
    # Both idle now: task two's next turn still goes where its container lives (a tie would
    # have chosen B).
    events = await collect(engines, spec("echo again", role="reviewer", workspace=two))
    assert [e.text for e in events if e.kind == "final"] == ["again"]
    assert engines.engine_of(key_two) is a
    assert on(engines, 0) == {str(one)}  # owner and reviewer of task one
    assert on(engines, 1) == {str(two)}
    assert len(b.backend.pool.held()) == 2 and len(a.backend.pool.held()) == 2
    assert engines.engine_notes() == []


def bot_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, image: str, engines: list[str]
) -> Path:
    """A working folder whose tribunal.toml names the engines (backend docker); the data
    folder is returned."""
    for name in list(os.environ):
        if name.startswith(("TRIBUNAL_", "DOCKER_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    listed = ", ".join(f'"{e}"' for e in engines)
    (tmp_path / "tribunal.toml").write_text(
        f'backend = "docker"\ndata = "{data}"\n[docker]\nimage = "{image}"\nengines = [{listed}]\n'
    )
    return data


async def test_the_bot_runs_its_turns_on_the_engines_of_its_settings(
    engine_pair: Pair, runner_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b, a = engine_pair.b.docker_host, engine_pair.a_host
    bot_settings(monkeypatch, tmp_path, runner_image, [b, a])
    settings = load_settings(env_file=None)
    ws = workspace(tmp_path, "ws")
    check = Check(id="T1", command="echo checked-in-a-container", timeout_s=60.0)
    spec = RunSpec(
        group="g",
        agent="command",
        request=RunRequest(role="executor", prompt="checks", checks=[check]),
        workspace=str(ws),
    )
    async with running_backend(settings, warn=io.StringIO()) as (runner, choice):
        assert choice.kind == "docker"
        events = [event async for event in runner.run(spec)]
        [final] = [e for e in events if e.kind == "final"]
        [result] = final.structured["checks"]  # type: ignore[index]
        assert result["exit_status"] == 0 and "checked-in-a-container" in result["output_tail"]
        instance = settings.docker_instance
        label = {"label": f"tribunal.instance={instance}"}
        first, second = (Endpoint(h).connect() for h in (b, a))
        try:
            assert len(first.containers.list(filters=label)) == 1  # B: listed first, both idle
            assert second.containers.list(filters=label) == []
            assert engine_notes(runner) == []
        finally:
            first.close()
            second.close()
    for host in (b, a):
        client = Endpoint(host).connect()
        try:
            assert client.containers.list(all=True, filters=label) == []
        finally:
            client.close()


def test_doctor_checks_every_engine(
    engine_pair: Pair, runner_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # check_engines is what `tribunal doctor` adds for `[docker] engines` (bot/doctor/__init__);
    # called alone here: the doctor's other engine checks (the runner binaries in the image,
    # ~20 s) are tests/container/test_bot_docker.py's.
    b, a = engine_pair.b.docker_host, engine_pair.a_host
    absent = f"unix://{tmp_path}/absent.sock"
    data = bot_settings(monkeypatch, tmp_path, runner_image, [b, a, absent])
    checks = list(check_engines(load_settings(env_file=None)))
    lines = [c.line for c in checks]
    for host in (b, a):
        [line] = [x for x in lines if x.startswith(f"engine {host}: ")]
        assert line.startswith(f"engine {host}: ok (Podman Engine "), lines
        assert line.endswith(f"; a container ran and saw {data})"), lines
    assert f"engine {absent}: not reachable (No such file or directory): drained" in lines
    assert lines[-1] == "engines: ok (2 of 3 usable; the 1 other(s) are drained)"
    assert [c.required for c in checks] == [False, False, False, True]
    assert not list(data.glob(".doctor-*"))  # its mark is gone again


async def test_an_engine_stopped_mid_turn_is_drained_and_the_task_finishes_on_the_other(
    make_set: MakeSet, engine_pair: Pair, tmp_path: Path
) -> None:
    engines = make_set(PAIR_RUNNER, check_s=3600.0)  # the turn's own failure finds the loss
    await engines.start()
    b, a = engines.engines
    ws = workspace(tmp_path, "ws")
    policy = GroupPolicy(name="g", workspace=str(ws))
    async with engine_kit(tmp_path, runner=engines, policy=policy) as kit:  # type: ignore[arg-type]
        await kit.say("@tribunal build it")
        await until(lambda: (ws / MARK).exists())  # the owner's first turn runs, on B
        assert engines.engine_of(("g", str(ws))) is b
        assert (ws / MARK).read_text() in {c.id[:12] for c in b.backend.client.containers.list()}
        service = engine_pair.b
        assert service.process is not None
        os.kill(service.process.pid, signal.SIGKILL)  # B stops answering, as a crashed host
        service.stop()
        await kit.settle(timeout=120)

        task = await kit.task()
        assert task.status == "closed"
        turns = await kit.store.turns(1)
        assert [(t.role, t.status) for t in turns] == [
            ("owner", "interrupted"),
            ("owner", "done"),
            ("reviewer", "done"),
            ("owner", "done"),
        ]
        assert f"the container engine {b.name} stopped answering" in (turns[0].error or "")
        assert b.drained is not None and a.drained is None
        assert engines.engine_of(("g", str(ws))) is a
        assert on(engines, 1) == {str(ws)}  # the turns run again ran on A
        assert any(
            "its container engine stopped answering. Running it again" in t
            for t in kit.platform.texts()
        )
        status = await kit.engine.status_text(ROOM)
        assert f"Container engine {b.name} is drained since" in status

        # B comes back: the health check puts it in service again (its stranded run killed).
        service.start()
        await engines.check()
        assert b.drained is None and engines.engine_notes() == []
        assert f"Container engine {b.name}" not in await kit.engine.status_text(ROOM)


async def test_a_hung_engine_is_found_by_the_health_check(
    make_set: MakeSet, engine_pair: Pair, tmp_path: Path
) -> None:
    engines = make_set(FAKE_RUNNER, check_s=0.5, ping_timeout_s=3)
    await engines.start()
    b, a = engines.engines
    ws = workspace(tmp_path, "ws")
    events = engines.run(spec("hang", workspace=ws, idle_timeout_s=120.0))
    service = engine_pair.b
    assert service.process is not None
    try:
        async with asyncio.timeout(60):
            async for event in events:
                if event.kind == "progress":  # the runner runs, on B
                    break
        assert engines.engine_of(("g1", str(ws))) is b
        os.kill(service.process.pid, signal.SIGSTOP)
        async with asyncio.timeout(30):  # far less than the turn's idle timeout
            rest = [event async for event in events]
        assert [e.code for e in rest if e.kind == "error"] == ["engine_lost"], rest
        assert b.drained is not None and a.drained is None
    finally:
        os.kill(service.process.pid, signal.SIGCONT)
    await until(lambda: b.drained is None, timeout=60)  # the health check puts it back
    assert engines.engine_notes() == []
