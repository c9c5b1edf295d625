"""A first run against the real Podman (issue 27 #2, #3, #4): `auto` backend, no engine at
DOCKER_HOST, through `tribunal chat`, `tribunal doctor` and `tribunal image build`.

- #4 a Podman that fails every container start the way it does without nesting
  (tests/fakes/caged_podman.py): the first start finds it out with one probe right after starting
  its own Podman (nothing is built), says so in one line with the real cause first and the fix,
  remembers it, and leaves no process behind; the second start tries nothing, says the same.
- #2 `doctor` checks the engine the bot uses (a running bot's own Podman, or one it starts as
  the bot would), runs a container there and the runner binaries in its image; every line
  agrees, also where containers cannot run.
- #3 `image build` with no engine configured builds on the bot's own Podman."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

import container.base_image
from bot.cli import main
from container.image import CONTENT_KEY_LABEL
from container.podman_service import PodmanService
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


def _doctor(tmp_path: Path, closed: str, **extra: str) -> tuple[int, dict[str, str]]:
    env = first_run_env(tmp_path, DOCKER_HOST=closed, ANTHROPIC_API_KEY="sk-ant-first-run")
    del env["TRIBUNAL_BACKEND"]  # auto
    env.update(extra)
    done = subprocess.run(
        [str(TRIBUNAL), "doctor"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=150,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, dict(line.split(": ", 1) for line in done.stdout.splitlines())


def _closed_socket(tmp_path: Path) -> str:
    closed = tmp_path / "nothing.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(closed))
    return f"unix://{closed}"


def test_doctor_checks_the_engine_a_running_bot_started_and_the_runners_in_its_image(
    tmp_path: Path, runner_image: str
) -> None:
    """Issue 27 #2: the bot's own engine is running (as `bot/run` starts it) while DOCKER_HOST
    names nothing: the doctor checks that engine, runs a container there, finds the image and
    runs the runner binaries inside it, and every line says the same thing."""
    engine = (tmp_path / "data").resolve() / "engine"
    service = PodmanService(engine).start()
    try:
        status, lines = _doctor(
            tmp_path, _closed_socket(tmp_path), TRIBUNAL_DOCKER__IMAGE=runner_image
        )
        assert service.running  # the bot's engine is not the doctor's to stop
    finally:
        service.stop()
    where = f"unix://{engine / 'podman.sock'}"
    assert status == 0, lines
    assert lines["backend"] == (
        f"ok (docker on the bot's own Podman at {where} (the bot's, running), which has the "
        f"image {runner_image})"
    )
    assert lines["engine"].startswith("ok (Podman Engine") and lines["engine"].endswith(
        f"at {where}; a probe container ran)"
    )
    assert lines["image"].startswith(f"ok ({runner_image}, ")
    assert lines["runner claude"].startswith("ok (") and "in the image" in lines["runner claude"]
    assert lines["runner command"] == "ok (runners.command, in the image)"


def test_doctor_on_a_machine_where_containers_cannot_run_says_local_on_every_line(
    tmp_path: Path,
) -> None:
    """Issue 27 #2 and #4: podman is installed but cannot run a container. The doctor starts
    the bot's own Podman as the bot would, its probe container fails, and the verdict is one:
    local turns, with the real cause; nothing of the engine is left running."""
    cage(tmp_path / "bin")
    status, lines = _doctor(
        tmp_path,
        _closed_socket(tmp_path),
        PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        TRIBUNAL_DOCKER__IMAGE="localhost/tribunal-never-built:none",
    )
    engine = (tmp_path / "data").resolve() / "engine"
    assert status == 0, lines  # auto still works, unisolated: a warning
    assert lines["backend"].startswith(
        "local (auto), so the turns run unisolated on this host: containers cannot run on this "
        "machine ("
    )
    assert NO_NESTING in lines["backend"] and "TRIBUNAL_BACKEND=local" in lines["backend"]
    assert "answers, but cannot run a container: " in lines["engine"]
    assert lines["image"] == "localhost/tribunal-never-built:none: not checked (no container runs)"
    assert (
        lines["runner claude"].startswith("ok (") and "in the image" not in lines["runner claude"]
    )
    assert NO_NESTING in (engine / "containers-cannot-run").read_text()  # the bot won't retry
    assert service_processes(engine / "podman.sock") == []


@pytest.mark.usefixtures("small_inputs")
def test_image_build_with_no_engine_configured_builds_on_the_bots_own_podman(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    docker_client: Any,
    base_image: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 27 #3: `tribunal image build` on the README's default set-up (no DOCKER_HOST
    engine, podman installed) builds with the bot's own engine, from the registry-free base,
    and stops that engine again."""
    # The tests' debootstrap base stands in for the product's (same recipe, cached here).
    monkeypatch.setattr(container.base_image, "BASE_REPOSITORY", base_image.partition(":")[0])
    monkeypatch.setenv("DOCKER_HOST", _closed_socket(tmp_path))
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("TRIBUNAL_BACKEND", raising=False)
    tag = f"localhost/tribunal-image-cli-test:{uuid.uuid4().hex[:8]}"
    try:
        assert main(["image", "build", "--tag", tag]) == 0
        captured = capsys.readouterr()
        assert f"built {tag} (" in captured.out
        assert "starting the bot's own Podman" in captured.err
        assert f"building {tag} FROM {base_image} on unix://" in captured.err
        assert CONTENT_KEY_LABEL in (docker_client.images.get(tag).labels or {})
    finally:
        with contextlib.suppress(Exception):
            docker_client.images.remove(tag)
    engine = (tmp_path / "data").resolve() / "engine"
    assert service_processes(engine / "podman.sock") == []
