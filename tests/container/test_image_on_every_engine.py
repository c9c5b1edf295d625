"""`tribunal image build` with `[docker] engines` (container/image_spread.py): the image on every
engine, through the real CLI, on two real Podman services and one that is down.

Engine A is the session's, listed first: the image is built there (from the session's base,
with Podman's layer cache). Engine B is a second Podman service with empty storage of its own
(tests/fakes/podman.py `private_engine(share_images=False)`, as a new host): it gets the image
by save and load. A third engine's socket does not exist. The image is the cut-down one of
`small_inputs` (the real Dockerfile through the same code, without the 800 MB of wheels and
Codex; the archive is still the base's ~0.33 GB). Run again, nothing is built or copied.

Also: a build that fails (the same on every engine) is said once and nothing is copied; with
every engine down, each is named and nothing is fetched or built.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from container.endpoints import Endpoint
from container.image import CONTENT_KEY_LABEL
from tests.container.test_bot_docker import docker_host_of
from tests.container.test_engine_set import bot_settings
from tests.fakes.podman import private_engine, unmount_under

pytestmark = [pytest.mark.engine, pytest.mark.timeout(300)]


@pytest.mark.usefixtures("small_inputs")
def test_image_build_puts_the_image_on_every_engine_and_names_the_one_that_is_down(
    docker_client: Any,
    base_image: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tag = f"localhost/tribunal-spread-test:{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "engine-b"
    b = private_engine(folder, share_images=False).start()
    a = docker_host_of(docker_client)
    absent = f"unix://{tmp_path}/absent.sock"
    work = tmp_path / "work"
    work.mkdir()
    try:
        bot_settings(monkeypatch, work, tag, [a, b.docker_host, absent])
        build = ["image", "build", "--base", base_image, "--tag", tag]
        assert main(build) == 1
        out, err = capsys.readouterr()
        lines = out.splitlines()
        assert lines[0] == f"engine {absent}: not reachable (No such file or directory): skipped"
        assert lines[1].startswith(f"engine {a}: built {tag} (sha256:"), out
        assert lines[2].startswith(f"engine {b.docker_host}: loaded {tag} (sha256:"), out
        assert f") from {a}: " in lines[2] and "loaded in" in lines[2]
        assert len(lines) == 3
        assert err.splitlines()[-1].startswith(
            f"tribunal image: {tag} is not on 1 of 3 engines: {absent}; "
        )
        # The same image (id and content key) on both: what the bot's health check looks up.
        built = Endpoint(b.docker_host).connect()
        try:
            on_b = built.images.get(tag)
        finally:
            built.close()
        on_a = docker_client.images.get(tag)
        assert on_a.id == on_b.id
        assert on_a.labels[CONTENT_KEY_LABEL] == on_b.labels[CONTENT_KEY_LABEL]

        # Again, with the engine that was down left out: nothing to do anywhere, exit 0.
        bot_settings(monkeypatch, work, tag, [a, b.docker_host])
        assert main(build) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines == [
            f"engine {a}: {tag} ({on_a.id[:19]}) is up to date: nothing to build",
            f"engine {b.docker_host}: has {tag} already ({on_b.id[:19]}, the same content key)",
        ]
    finally:
        with contextlib.suppress(Exception):
            docker_client.images.remove(tag)
        b.stop()
        unmount_under(folder)
        shutil.rmtree(folder, ignore_errors=True)  # B's storage: the image's 0.33 GB


@pytest.mark.usefixtures("small_inputs")
def test_a_build_that_fails_is_said_once_and_nothing_is_copied(
    docker_client: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The build's own failure (here a base the engine lacks and cannot pull; its registry is
    `localhost`, so the pull never leaves this machine) would fail on every engine alike: it is
    reported once, with what to do, and no other engine is tried."""
    a = docker_host_of(docker_client)
    absent = f"unix://{tmp_path}/absent.sock"
    tag = f"localhost/tribunal-spread-test:{uuid.uuid4().hex[:8]}"
    bot_settings(monkeypatch, tmp_path, tag, [absent, a])
    base = "localhost:9/tribunal-absent-base:none"
    assert main(["image", "build", "--base", base, "--tag", tag]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"engine {absent}: not reachable (No such file or directory): skipped"
    ]
    assert "tribunal image: image build failed" in err
    assert f"The base image {base} is not on the engine and could not be pulled" in err
    with pytest.raises(Exception):  # noqa: B017  (ImageNotFound: nothing was tagged)
        docker_client.images.get(tag)


def test_with_every_engine_down_each_is_named_and_nothing_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    down = [f"unix://{tmp_path}/{name}.sock" for name in ("one", "two")]
    bot_settings(monkeypatch, tmp_path, "localhost/tribunal-spread-test:none", down)
    assert main(["image", "build", "--base", "localhost/none", "--tag", "t:x"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"engine {host}: not reachable (No such file or directory): skipped" for host in down
    ]
    assert err.splitlines()[-1].startswith(
        f"tribunal image: t:x is not on 2 of 2 engines: {down[0]}, {down[1]}; "
    )
