"""Resolve's tests run by the engine in the real runner image (Podman): the real engine with
scripted agents, the real command runner in a read-only `executor` container with no network.
A test that writes the workspace fails, the workspace is unchanged, and $TMPDIR is writable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from container.docker_backend import RUNNER_COMMAND
from rooms.base.model import GroupPolicy
from rooms.base.words import CLOSED
from tests.container.conftest import MakeBackend
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import ScriptedRunner, say
from tests.rooms.resolve import scripts

pytestmark = [pytest.mark.engine, pytest.mark.timeout(240)]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


async def test_a_check_cannot_write_the_workspace_in_the_runner_image(
    make_backend: MakeBackend, workspace: Path, tmp_path: Path, docker_client: Any
) -> None:
    before = snapshot(workspace)
    tests = [
        # A says the workspace can be written by a test; B says it cannot.
        scripts.test("T1", "echo forged > README.md && echo forged > new.txt", A="PASS", B="FAIL"),
        scripts.test("T2", "grep -q hello README.md", A="PASS", B="PASS"),  # it reads
        scripts.test("T3", 'echo ok > "$TMPDIR/t" && grep -q ok "$TMPDIR/t"', A="FAIL", B="PASS"),
        scripts.test(
            "T4",
            "python3 -c \"import socket; socket.create_connection(('192.0.2.1', 80), 2)\"",
            A="PASS",
            B="FAIL",
        ),
    ]
    positions = scripts.positions(("A", "tests may write"), ("B", "tests only read"))
    backend = make_backend(command=RUNNER_COMMAND, network_mode="none")
    agents = ScriptedRunner(
        {
            "positions": [say(json.dumps(positions))],
            "designer": [say(json.dumps(scripts.design(*tests)))],
        },
        commands=backend,
    )
    policy = GroupPolicy(name="g", workspace=str(workspace), approvers=frozenset({"boss"}))
    async with engine_kit(tmp_path, policy=policy, runner=agents) as kit:
        await kit.say("@tribunal resolve may a test write the workspace?")
        await kit.settle(180)
        task = await kit.task()
        texts = kit.platform.texts()
        assert task.status == CLOSED, texts
        results = next(t for t in texts if t.startswith("🧪 **Results**"))
        assert "- **T1** test_t1: **FAIL** (exit 2)" in results, results
        assert "Read-only file system" in results
        assert "- **T2** test_t2: **PASS** (exit 0)" in results
        assert "- **T3** test_t3: **PASS** (exit 0)" in results
        assert "- **T4** test_t4: **FAIL** (exit 1)" in results  # no network
        assert any(t.startswith("🧪 **Resolved: B**") for t in texts)
    assert snapshot(workspace) == before
    # The tests ran in a container of their own, with the workspace mounted read-only.
    [container] = [c for c in backend.pool.listed() if c.labels["tribunal.role"] == "executor"]
    mounts = docker_client.containers.get(container.id).attrs["Mounts"]
    assert [m["RW"] for m in mounts if m["Destination"] == "/workspace"] == [False]
