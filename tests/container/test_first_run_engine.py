"""A first run on a machine whose Podman cannot run containers (issue 27 #4), through
`tribunal chat` in its own process: `auto` backend, no engine at DOCKER_HOST, and a Podman that
fails every container start the way it does without nesting (tests/fakes/caged_podman.py).

The first start finds it out with one probe right after starting its own Podman (nothing is
built), says so in one line with the real cause first and the fix, remembers it, and leaves
no process behind; the second start tries nothing and says the same in one line."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.bot.test_first_run import TRIBUNAL, first_run_env
from tests.container.test_owned_engine import service_processes
from tests.fakes.caged_podman import NO_NESTING, cage

pytestmark = [
    pytest.mark.engine,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        shutil.which("podman") is None or shutil.which("runc") is None, reason="needs podman"
    ),
]


def _chat(tmp_path: Path, closed: str) -> subprocess.CompletedProcess[str]:
    env = first_run_env(
        tmp_path,
        DOCKER_HOST=closed,
        PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        ANTHROPIC_API_KEY="sk-ant-first-run",
    )
    del env["TRIBUNAL_BACKEND"]  # auto, as a first run has it
    env["TRIBUNAL_DOCKER__IMAGE"] = "localhost/tribunal-never-built:none"
    return subprocess.run(
        [str(TRIBUNAL), "chat"],
        input="/quit\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=150,
    )


def test_a_podman_that_cannot_run_containers_is_found_at_once_said_once_and_remembered(
    tmp_path: Path,
) -> None:
    cage(tmp_path / "bin")
    closed = tmp_path / "nothing.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(closed))
    engine = (tmp_path / "data").resolve() / "engine"
    remembered = engine / "containers-cannot-run"

    first = _chat(tmp_path, f"unix://{closed}")
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    warning = [line for line in lines if "WARNING" in line]
    assert len(warning) == 1, first.stderr
    assert warning[0].startswith("tribunal: WARNING: containers cannot run on this machine (")
    assert NO_NESTING in warning[0]
    assert "Set TRIBUNAL_BACKEND=local" in warning[0] and str(remembered) in warning[0]
    assert first.stderr.count(NO_NESTING) == 1  # the warning's cause, no dump, no repeat
    assert not any("building" in line or "fetching" in line for line in lines), first.stderr
    assert "start Docker" not in first.stderr  # not the wrong cause
    assert NO_NESTING in remembered.read_text()
    assert service_processes(engine / "podman.sock") == []  # nothing left after /quit

    second = _chat(tmp_path, f"unix://{closed}")
    assert second.returncode == 0, second.stderr
    assert second.stderr.splitlines() == warning  # the same line, and nothing tried
    assert service_processes(engine / "podman.sock") == []
