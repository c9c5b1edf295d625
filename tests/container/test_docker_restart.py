"""A restart of the bot: a new DockerBackend on the same engine reuses or removes what the old one
left (the rule in container/docker_pool.py), kills runs the old process left running (and their
strays that left the run's group), never touches another instance's containers, and nothing leaks
(listed by label at the end)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from container.docker_exec import WRAPPER
from container.docker_pool import INSTANCE, MANAGED
from tests.container.conftest import MakeBackend, collect, spec

pytestmark = [pytest.mark.engine, pytest.mark.timeout(180)]


def _by_label(docker_client: Any, instance: str) -> list[Any]:
    labels = [f"{MANAGED}=1", f"{INSTANCE}={instance}"]
    return list(docker_client.containers.list(all=True, filters={"label": labels}))


def _processes(container: Any) -> str:
    script = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"
    return container.exec_run(["sh", "-c", script]).output.decode()


async def test_restart_reuses_matching_containers_and_removes_the_rest(
    make_backend: MakeBackend, docker_client: Any
) -> None:
    instance = f"test-restart-{uuid.uuid4().hex[:8]}"
    first = make_backend(instance=instance)
    assert await first.start() == (0, 0)
    for role in ("owner", "reviewer"):
        events = await collect(first, spec(f"write /home/runner/{role}.txt kept", role=role))
        assert [e.kind for e in events][-1] == "final", events
    owner = docker_client.containers.get(first.pool.ensure(_placement("owner")))
    # The old bot process "crashes" in the middle of a turn: its runner is still running.
    owner.exec_run(["sh", "-c", WRAPPER, "tribunal-run", "orphan", "sleep", "600"], detach=True)
    # And one of its processes left the run's group (as Claude Code's Bash tool does).
    owner.exec_run(["setsid", "sleep", "601"], detach=True)
    await asyncio.sleep(0.5)
    assert "sleep 600" in _processes(owner) and "sleep 601" in _processes(owner)
    old_ids = {c.id for c in _by_label(docker_client, instance)}
    assert len(old_ids) == 2

    # Same instance, same configuration: both reused, the orphaned run killed, HOME kept.
    second = make_backend(instance=instance)
    assert await second.start() == (2, 0)
    assert "sleep 600" not in _processes(owner) and "sleep 601" not in _processes(owner)
    events = await collect(second, spec("echo again"))
    assert [e.text for e in events if e.kind == "final"] == ["again"]
    assert {c.id for c in _by_label(docker_client, instance)} == old_ids
    assert owner.exec_run(["cat", "/home/runner/owner.txt"]).output == b"kept"

    # Another instance on the same engine is left alone by this instance's restarts.
    neighbour = make_backend()
    await collect(neighbour, spec("echo neighbour"))
    neighbour_ids = {c.id for c in neighbour.pool.listed()}

    # Same instance, another configuration (limits changed): everything of the old one goes.
    third = make_backend(instance=instance, mem_limit="256m")
    assert await third.start() == (0, 2)
    assert _by_label(docker_client, instance) == []
    await collect(third, spec("echo fresh"))
    [fresh] = _by_label(docker_client, instance)
    assert fresh.id not in old_ids
    assert {c.id for c in neighbour.pool.listed()} == neighbour_ids

    # A stopped container of the instance is not reused either.
    fresh.stop(timeout=1)
    fourth = make_backend(instance=instance, mem_limit="256m")
    assert await fourth.start() == (0, 1)

    assert await third.close() == 0  # fourth already removed it
    assert await neighbour.close() == 1
    assert _by_label(docker_client, instance) == []


async def test_close_removes_every_container_it_made(
    make_backend: MakeBackend, docker_client: Any
) -> None:
    backend = make_backend()
    await asyncio.gather(
        *(
            collect(backend, spec("echo x", group=f"g{i}", role=r))
            for i in range(2)
            for r in ("owner", "reviewer")
        )
    )
    assert len(backend.pool.listed()) == 4
    assert await backend.close() == 4
    assert backend.pool.listed() == []


def _placement(role: str) -> Any:
    from container.docker_pool import Placement

    return Placement("g1", role, None)
