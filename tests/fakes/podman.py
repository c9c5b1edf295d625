"""A real Docker-API engine for the tests: rootful Podman served on a private unix socket.

`engine()` yields a `docker.DockerClient`:
- when DOCKER_HOST is set and that engine answers a ping, that engine (nothing is started);
- else, when `podman` is installed, a `podman system service` this module starts on
  `<tmpdir>/podman.sock` with its own containers.conf, and stops (that process only) at the end;
- else None (the caller skips the tests marked `engine`).

The service is the product's own (container/podman_service.py: the containers.conf with runc
and equal soft/hard ulimits, notes §10). Podman's image store stays at its default location, so
images cached by tag survive between test runs.

`ensure_base_image()` makes the registry-free base image (container/base_image.py: a debootstrap
minbase rootfs with Python and git) under the tests' own repository name.

Run `python -m tests.fakes.podman prepare` to do the slow, networked part (debootstrap from the
Debian mirror) before the tests, e.g. from tests/run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import docker

from container import base_image
from container.base_image import _imported_id  # noqa: F401  (tests/container/test_image.py)
from container.podman_service import PodmanService, answers

BASE_REPOSITORY = "localhost/tribunal-test-base"


@contextlib.contextmanager
def engine(timeout_s: int = 300) -> Iterator[docker.DockerClient | None]:
    """Yield a client for DOCKER_HOST if it answers, else for a Podman we start, else None."""
    host = os.environ.get("DOCKER_HOST")
    if host and answers(host):
        client = docker.DockerClient(base_url=host, timeout=timeout_s)
        try:
            yield client
        finally:
            client.close()
        return
    if shutil.which("podman") is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="tribunal-podman-") as tmp:
        service = PodmanService(Path(tmp)).start()
        client = docker.DockerClient(base_url=service.docker_host, timeout=timeout_s)
        try:
            yield client
        finally:
            client.close()
            service.stop()


# A second engine: its own containers, state and storage (graphroot, runroot), so it is really
# another engine (it neither sees nor touches the first one's containers). Images are read from
# the default store as an additional image store, read-only: the runner image built there is
# present on both without copying its 1.3 GB (a `podman save | load` would cost ~30 s a session),
# as two hosts would share a read-only image store.
PRIVATE_STORAGE_CONF = """\
[storage]
driver = "overlay"
graphroot = "{root}/storage"
runroot = "{root}/run"
[storage.options]
additionalimagestores = ["{images}"]
"""


def default_graphroot() -> str:
    """Where the default Podman keeps its images (podman info)."""
    found = subprocess.run(
        ["podman", "info", "--format", "{{.Store.GraphRoot}}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return found.stdout.strip()


def private_engine(folder: Path, *, share_images: bool = True) -> PodmanService:
    """A Podman service (not started) with storage of its own in `folder`, whose images are the
    default store's, read-only (with `share_images`; else it starts with no image at all, as a
    new host: tests/bench/bench_image_spread.py)."""
    folder.mkdir(parents=True, exist_ok=True)
    conf = folder / "storage.conf"
    text = PRIVATE_STORAGE_CONF.format(root=folder, images=default_graphroot())
    if not share_images:
        text = text.partition("[storage.options]")[0]
    conf.write_text(text)
    return PodmanService(folder / "service", env={"CONTAINERS_STORAGE_CONF": str(conf)})


def unmount_under(folder: Path, *, quiet_s: float = 1.0, timeout_s: float = 15.0) -> None:
    """Unmount what a private engine's storage left mounted in `folder` (its overlay folder is
    a mount of its own), so the folder can be removed; only mounts under `folder`. Again until
    none came back for `quiet_s`: a container's exit runs a `podman container cleanup` (started
    by its conmon) that may mount the storage again after the service stopped."""
    prefix = str(folder.resolve()) + "/"
    deadline = time.monotonic() + timeout_s
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        with open("/proc/self/mounts") as mounts:
            points = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
        if not points and time.monotonic() - quiet_since >= quiet_s:
            return
        for point in sorted(points, key=len, reverse=True):  # the innermost first
            subprocess.run(["umount", "-l", point], check=False, timeout=60)
        if points:
            quiet_since = time.monotonic()
        time.sleep(0.1)


def ensure_base_image(client: docker.DockerClient) -> str:
    """The tests' debootstrap base image (container/base_image.py, under the tests' own name)."""
    return base_image.ensure_base_image(client, repository=BASE_REPOSITORY)


def main(argv: list[str]) -> int:
    if argv[:1] != ["prepare"]:
        print("usage: python -m tests.fakes.podman prepare", file=sys.stderr)
        return 2
    with engine() as client:
        if client is None:
            print("no engine: neither DOCKER_HOST nor podman", file=sys.stderr)
            return 1
        print(ensure_base_image(client))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
