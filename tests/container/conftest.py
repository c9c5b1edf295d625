"""Fixtures for the container tests: a real Docker-API engine (Podman) and the runner image.

- `docker_client` (session): DOCKER_HOST when it answers, else a Podman service started for the
  session and stopped at its end (tests/fakes/podman.py); tests skip when there is neither.
- `runner_image` (session): container/Dockerfile built FROM the debootstrap base with no registry
  (the base ~35 s and the image ~40 s the first time; both are cached in Podman's store under
  content-keyed tags, so later sessions take ~2 s). Needs the wheelhouse and the Codex CLI in the
  cache folder: `python -m container.image fetch` (tests/run does it). Without them, or without
  debootstrap, the tests skip, unless TRIBUNAL_REQUIRE_ENGINE=1 (CI), where they fail.
- `small_inputs` (function): the image's inputs cut down to what its build steps need (only pip
  in the wheelhouse, a stub Codex, the real runners), set up as the cache folder and CODEX_BIN,
  for tests of the build's own paths (errors, the bot building a missing image): the real
  Dockerfile through the same code, without sending hundreds of MB the tests do not look at.
- `make_backend` (function): DockerBackends with their own instance id and the test runner
  programs (tests/container/programs) mounted read-only at /opt/test-runners; at the end every
  container of those instances is removed and the test fails if one was left.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import bot.platforms  # noqa: F401  (the settings read the platforms' declarations)
import container.image
from container.docker_backend import DockerBackend
from container.docker_pool import MANAGED, DockerConfig
from container.image import ContextInputs, ImageError, build_image, default_inputs, wheelhouse_dir
from runners.protocol import RunEvent, RunRequest, RunSpec
from tests.fakes.podman import engine, ensure_base_image
from tests.fakes.required import unavailable

PROGRAMS = Path(__file__).with_name("programs")
FAKE_RUNNER = ("python3", "/opt/test-runners/fake_runner.py")
TEST_IMAGE = "localhost/tribunal-runner:test"


_unavailable = unavailable  # tests/fakes/required.py: skip, or fail when required


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    with engine() as client:
        if client is None:
            _unavailable("no Docker-API engine: DOCKER_HOST does not answer and podman is absent")
        yield client


@pytest.fixture(scope="session")
def base_image(docker_client: Any) -> str:
    try:
        return ensure_base_image(docker_client)
    except RuntimeError as exc:
        _unavailable(f"no base image: {exc}")
        raise


@pytest.fixture(scope="session")
def runner_image(docker_client: Any, base_image: str) -> str:
    try:
        inputs = default_inputs()
    except ImageError as exc:
        _unavailable(str(exc))
        raise
    build_image(docker_client, tag=TEST_IMAGE, base=base_image, inputs=inputs)
    return TEST_IMAGE


@pytest.fixture
def small_inputs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ContextInputs:
    try:
        [pip_wheel, *_] = sorted(default_inputs().wheelhouse.glob("pip-*.whl"))
    except (ImageError, ValueError) as exc:
        _unavailable(f"no cached wheelhouse with pip: {exc}")
    requirements = "pip\n"  # pip itself: the Dockerfile's install step has one wheel to install
    monkeypatch.setattr(container.image, "runner_requirements", lambda: requirements)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    wheelhouse = wheelhouse_dir(None, requirements)
    wheelhouse.mkdir(parents=True)
    shutil.copy2(pip_wheel, wheelhouse / pip_wheel.name)
    (wheelhouse / ".complete").write_text(requirements)
    codex = tmp_path / "codex"
    codex.write_text("#!/bin/sh\necho 'codex stub'\n")
    monkeypatch.setenv("CODEX_BIN", str(codex))
    return default_inputs()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace the container user (uid 1000) may write to, as a real deployment needs."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("hello\n")
    os.chown(ws, 1000, 1000)
    os.chown(ws / "README.md", 1000, 1000)
    return ws


MakeBackend = Callable[..., DockerBackend]


@pytest.fixture
async def make_backend(docker_client: Any, runner_image: str) -> AsyncIterator[MakeBackend]:
    made: list[DockerBackend] = []
    instances: set[str] = set()

    def make(
        *,
        instance: str | None = None,
        command: tuple[str, ...] = FAKE_RUNNER,
        env: dict[str, str] | None = None,
        **config: Any,
    ) -> DockerBackend:
        instance = instance or f"test-{uuid.uuid4().hex[:10]}"
        instances.add(instance)
        settings = {
            "image": runner_image,
            "instance": instance,
            "network_mode": "host",
            "mem_limit": "512m",
            "extra_mounts": {str(PROGRAMS): "/opt/test-runners"},
            **config,
        }
        backend = DockerBackend(docker_client, DockerConfig(**settings), command=command, env=env)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        await backend.close()
    left = [
        c.name
        for c in docker_client.containers.list(all=True, filters={"label": f"{MANAGED}=1"})
        if (c.labels or {}).get("tribunal.instance") in instances
    ]
    for name in left:
        docker_client.containers.get(name).remove(force=True)
    assert not left, f"containers leaked: {left}"


def spec(
    prompt: str,
    *,
    role: str = "owner",
    agent: str = "claude",
    group: str = "g1",
    workspace: Path | None = None,
    **limits: Any,
) -> RunSpec:
    return RunSpec(
        group=group,
        agent=agent,  # type: ignore[arg-type]
        request=RunRequest(role=role, prompt=prompt, read_only=role != "owner"),
        workspace=str(workspace) if workspace else None,
        **limits,
    )


async def collect(backend: DockerBackend, run_spec: RunSpec) -> list[RunEvent]:
    return [event async for event in backend.run(run_spec)]
