"""One container per task workspace and role (container/docker_pool.py): two tasks of a group
taking turns keep their own containers and HOME, never see each other's worktree, a restart
adopts them, and the containers no longer needed go by the rule (idle limit, cap per group)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.container.conftest import MakeBackend, collect, spec

pytestmark = [pytest.mark.engine, pytest.mark.timeout(180)]


def _workspaces(tmp_path: Path, *names: str) -> list[Path]:
    made = []
    for name in names:
        ws = tmp_path / "worktrees" / name
        ws.mkdir(parents=True)
        (ws / "name.txt").write_text(name)
        os.chown(ws, 1000, 1000)  # the owner's container user must be able to write it
        made.append(ws)
    return made


def _final(events: list[Any]) -> str:
    assert events[-1].kind == "final", events
    return str(events[-1].text)


def _sh(docker_client: Any, container_id: str, script: str) -> tuple[int, str]:
    done = docker_client.containers.get(container_id).exec_run(["sh", "-c", script])
    return done.exit_code, done.output.decode()


async def test_tasks_taking_turns_keep_their_containers_until_the_rule_removes_them(
    make_backend: MakeBackend, docker_client: Any, tmp_path: Path
) -> None:
    now = [1000.0]
    backend = make_backend(max_per_group=2, max_idle_s=3600.0)
    backend.pool.clock = lambda: now[0]
    one, two, three = _workspaces(tmp_path, "1-one", "2-two", "3-three")

    # Task one's owner leaves something in its HOME; then the two tasks alternate.
    await collect(backend, spec("write /home/runner/mine.txt one", workspace=one))
    held = backend.pool.held()
    for ws in (two, one, two, one):
        now[0] += 10
        assert _final(await collect(backend, spec("echo turn", workspace=ws))) == "turn"
    assert len(backend.pool.held()) == 2
    assert set(held.values()) <= set(backend.pool.held().values())  # never recreated
    ids = {ws: backend.pool.held()[("g1", "owner", str(ws))] for ws in (one, two)}
    assert _sh(docker_client, ids[one], "cat /home/runner/mine.txt") == (0, "one")
    assert _sh(docker_client, ids[two], "cat /home/runner/mine.txt")[0] != 0
    # Each sees its own worktree only: not the other's files, not its host path.
    assert _sh(docker_client, ids[two], "cat /workspace/name.txt") == (0, "2-two")
    status, _ = _sh(docker_client, ids[two], f"ls {one} {one.parent}")
    assert status != 0
    # The owner of one cannot write into two (not mounted anywhere): its write lands nowhere.
    events = await collect(backend, spec(f"write {two}/name.txt hijacked", workspace=one))
    assert events[-1].kind == "error"
    assert (two / "name.txt").read_text() == "2-two"

    # Another group is counted apart; a restart of the same instance adopts every container.
    await collect(backend, spec("echo other", group="g2", workspace=three))
    again = make_backend(instance=backend.config.instance, max_per_group=2, max_idle_s=3600.0)
    again.pool.clock = lambda: now[0]
    assert await again.start() == (3, 0)
    assert again.pool.held() == backend.pool.held()

    # A third task of g1 passes the cap of 2: the least recently used (two) goes, not g2's.
    now[0] += 10
    await collect(again, spec("echo turn", workspace=one))
    now[0] += 10
    await collect(again, spec("echo three", workspace=three))
    assert set(again.pool.held()) == {
        ("g1", "owner", str(one)),
        ("g1", "owner", str(three)),
        ("g2", "owner", str(three)),
    }
    assert ids[two] not in {c.id for c in again.pool.listed()}

    # Past the idle limit, the next turn anywhere removes every idle container but its own.
    now[0] += 3601
    await collect(again, spec("echo late", role="reviewer", workspace=one))
    assert set(again.pool.held()) == {("g1", "reviewer", str(one))}
    assert len(again.pool.listed()) == 1
