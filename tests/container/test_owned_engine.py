"""The bot's own engine (container/podman_service.py, bot/engine_owned.py) on the real Podman.

- PodmanService: started, it answers on its socket; stopped, its process and socket are gone and
  an engine it did not start (the session's) still answers; one left by a killed owner is ended
  by the next start on the same folder (and a process a stale pid file names is not).
- `auto` with no engine answering and podman installed: the bot starts its own Podman on
  `<data>/engine/podman.sock`, runs the docker backend there, and leaves no process on close.
- `auto` whose own engine cannot get the image: the service is stopped again and the turns run
  locally with the warning saying why.
- `TRIBUNAL_BACKEND=local`: no engine is started.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import container.base_image
from bot.backend import running_backend
from bot.engine_owned import ensure_runner_image
from bot.settings import load_settings
from container.image import CONTENT_KEY_LABEL
from container.local import LocalBackend
from container.podman_service import PodmanService, PodmanServiceError, answers
from container.proxy.runner import ProxiedRunner

pytestmark = pytest.mark.engine


def service_processes(socket_path: Path) -> list[int]:
    """Pids of `podman system service` processes serving `socket_path` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"system" in argv and b"service" in argv and f"unix://{socket_path}".encode() in argv:
            found.append(int(entry.name))
    return found


@pytest.fixture
def closed_socket(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "nothing.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
    yield f"unix://{path}"


def test_service_starts_answers_and_stops_only_itself(docker_client: Any, tmp_path: Path) -> None:
    service = PodmanService(tmp_path / "engine").start()
    try:
        assert answers(service.docker_host) and service.running
        assert service_processes(service.socket_path) == [service.process.pid]  # type: ignore[union-attr]
        conf = (tmp_path / "engine" / "containers.conf").read_text()
        assert 'runtime = "runc"' in conf and "nofile=4096:4096" in conf
    finally:
        service.stop()
    assert not service.running and not service.socket_path.exists()
    assert service_processes(service.socket_path) == []
    service.stop()  # idempotent
    assert docker_client.ping()  # the session's engine, not started by this object, still answers


def test_a_service_left_by_a_killed_owner_is_ended_by_the_next_start(tmp_path: Path) -> None:
    left = PodmanService(tmp_path / "engine").start()  # its owner "dies": stop is never called
    assert left.process is not None
    old_pid = left.process.pid
    # An unrelated process whose pid a stale file might name is never touched.
    bystander = subprocess.Popen(["sleep", "30"])
    other = PodmanService(tmp_path / "other")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "service.pid").write_text(f"{bystander.pid}\n")
    assert other.leftover_pid() is None
    service = PodmanService(tmp_path / "engine").start()
    try:
        left.process.wait(timeout=15)  # ended (and reaped here: the test is its parent)
        assert service_processes(service.socket_path) == [service.process.pid]  # type: ignore[union-attr]
        assert service.process.pid != old_pid and answers(service.docker_host)  # type: ignore[union-attr]
        assert bystander.poll() is None
    finally:
        service.stop()
        bystander.kill()
        bystander.wait()
    assert service_processes(service.socket_path) == []


def test_a_service_that_exits_at_once_is_an_error_with_its_log(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "podman"
    fake.write_text("#!/bin/sh\necho 'cannot serve here' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", str(bin_dir))
        service = PodmanService(tmp_path / "engine")
        with pytest.raises(PodmanServiceError, match="exited with 3: cannot serve here"):
            service.start()
        assert not service.running


async def test_auto_without_an_engine_runs_on_the_bots_own_podman_and_stops_it(
    monkeypatch: pytest.MonkeyPatch, closed_socket: str, tmp_path: Path, runner_image: str
) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("DOCKER_HOST", closed_socket)
    monkeypatch.setenv("TRIBUNAL_DATA", str(data))
    monkeypatch.setenv("TRIBUNAL_DOCKER__IMAGE", runner_image)  # present: nothing to build
    warn = io.StringIO()
    sock = data.resolve() / "engine" / "podman.sock"
    async with running_backend(load_settings(env_file=None), warn=warn) as (runner, choice):
        assert choice.kind == "docker", warn.getvalue()
        assert choice.probe is not None and choice.probe.where == f"unix://{sock}"
        assert len(service_processes(sock)) == 1 and answers(f"unix://{sock}")
    assert "starting the bot's own Podman" in warn.getvalue()
    assert "WARNING" not in warn.getvalue()
    assert service_processes(sock) == [] and not sock.exists()


async def test_auto_whose_own_engine_cannot_get_the_image_runs_locally_and_says_why(
    monkeypatch: pytest.MonkeyPatch, closed_socket: str, tmp_path: Path, docker_client: Any
) -> None:
    # No debootstrap on PATH (podman only) and a base repository nobody has: the build fails.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "podman").symlink_to(shutil.which("podman") or "/usr/bin/podman")
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}")
    monkeypatch.setattr(container.base_image, "BASE_REPOSITORY", "localhost/tribunal-absent")
    data = tmp_path / "data"
    monkeypatch.setenv("DOCKER_HOST", closed_socket)
    monkeypatch.setenv("TRIBUNAL_DATA", str(data))
    monkeypatch.setenv("TRIBUNAL_DOCKER__IMAGE", "localhost/tribunal-absent-runner:none")
    warn = io.StringIO()
    sock = data.resolve() / "engine" / "podman.sock"
    async with running_backend(load_settings(env_file=None), warn=warn) as (runner, choice):
        assert (
            isinstance(runner, ProxiedRunner)
            and isinstance(runner.inner, LocalBackend)
            and choice.kind == "local"
        )
        assert service_processes(sock) == []  # stopped at once, not at close
    text = warn.getvalue()
    [warning] = [line for line in text.splitlines() if "WARNING" in line]
    assert warning.startswith(
        "tribunal: WARNING: the bot's own Podman could not be made ready: the runner image "
        "localhost/tribunal-absent-runner:none could not be built: debootstrap is not installed"
    )
    assert "NOT isolated" in warning and "Set TRIBUNAL_BACKEND=local" in warning


async def test_backend_local_starts_no_engine(
    monkeypatch: pytest.MonkeyPatch, closed_socket: str, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIBUNAL_BACKEND", "local")
    monkeypatch.setenv("DOCKER_HOST", closed_socket)
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    warn = io.StringIO()
    async with running_backend(load_settings(env_file=None), warn=warn) as (runner, choice):
        assert (
            isinstance(runner, ProxiedRunner)
            and isinstance(runner.inner, LocalBackend)
            and choice.kind == "local"
        )
        assert not (tmp_path / "data" / "engine").exists()
    # One line says what that means (issue 27 #6).
    assert warn.getvalue() == (
        "tribunal: backend local: the turns run as plain processes on this machine, "
        "unisolated (TRIBUNAL_BACKEND=local)\n"
    )


@pytest.mark.usefixtures("small_inputs")
def test_a_missing_image_is_built_on_the_engine_with_progress_lines(
    monkeypatch: pytest.MonkeyPatch, docker_client: Any, base_image: str, tmp_path: Path
) -> None:
    # The tests' debootstrap base stands in for the product's (same recipe, cached here).
    monkeypatch.setattr(container.base_image, "BASE_REPOSITORY", base_image.partition(":")[0])
    tag = f"localhost/tribunal-owned-test:{uuid.uuid4().hex[:8]}"
    service = PodmanService(tmp_path / "engine").start()
    monkeypatch.setenv("DOCKER_HOST", service.docker_host)
    monkeypatch.setenv("TRIBUNAL_DOCKER__IMAGE", tag)
    out = io.StringIO()
    try:
        ensure_runner_image(load_settings(env_file=None), out)
        image = docker_client.images.get(tag)  # the same image store as the session's engine
        assert CONTENT_KEY_LABEL in (image.labels or {})
        # A line per slow step as it starts, and one with its elapsed time when it ends.
        fetching = "tribunal: fetching the runner image's inputs (wheels from PyPI, Codex from npm)"
        building = f"tribunal: building {tag} FROM {base_image}"
        lines = out.getvalue().splitlines()
        assert lines[:2] == [
            f"tribunal: the engine has no image {tag}: building it (a few minutes the first time)",
            fetching,
        ]
        assert re.fullmatch(re.escape(fetching) + r": done in \d+ s", lines[2]), lines
        assert lines[3] == building
        assert re.fullmatch(re.escape(building) + r": done in (\d+ min )?\d+ s", lines[4]), lines
        assert len(lines) == 5
        again = io.StringIO()
        ensure_runner_image(load_settings(env_file=None), again)
        assert again.getvalue() == ""  # present: nothing to say, nothing built
    finally:
        with contextlib.suppress(Exception):
            docker_client.images.remove(tag)
        service.stop()
