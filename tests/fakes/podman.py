"""A real Docker-API engine for the tests: rootful Podman served on a private unix socket.

`engine()` yields a `docker.DockerClient`:
- when DOCKER_HOST is set and that engine answers a ping, that engine (nothing is started);
- else, when `podman` is installed, a `podman system service` this module starts on
  `<tmpdir>/podman.sock` with its own containers.conf, and stops (that process only) at the end;
- else None (the caller skips the tests marked `engine`).

The containers.conf carries the two fixes Podman 4.3 needs on our machines (notes §10): runc
instead of crun (crun fails on cgroup v1 hybrid hosts) and default ulimits lowered, with soft ==
hard because the compat API swaps soft and hard. Podman's image store stays at its default
location, so images cached by tag survive between test runs.

`ensure_base_image()` makes the registry-free base image: a debootstrap minbase rootfs with
Python and git, imported under a tag derived from what went into it, and reused when present.

Run `python -m tests.fakes.podman prepare` to do the slow, networked part (debootstrap from the
Debian mirror) before the tests, e.g. from tests/run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException, ImageNotFound

CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
[engine]
runtime = "runc"
"""

# What goes into the base image; the tag is a hash of this, so changing it makes a new image.
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "git", "ca-certificates", "procps")
BASE_FORMAT = "v1"  # bump to force a rebuild when the recipe below changes
BASE_REPOSITORY = "localhost/tribunal-test-base"


@dataclass
class PodmanService:
    """A `podman system service` process this module started, and the socket it serves."""

    process: subprocess.Popen[bytes]
    socket_path: Path
    state_dir: Path

    @property
    def docker_host(self) -> str:
        return f"unix://{self.socket_path}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.socket_path.unlink(missing_ok=True)


def start_podman_service(state_dir: Path, *, ready_timeout_s: float = 20.0) -> PodmanService:
    """Start `podman system service` on `<state_dir>/podman.sock`; wait until it answers."""
    state_dir.mkdir(parents=True, exist_ok=True)
    conf = state_dir / "containers.conf"
    conf.write_text(CONTAINERS_CONF)
    sock = state_dir / "podman.sock"
    sock.unlink(missing_ok=True)
    log = (state_dir / "service.log").open("wb")
    env = {**os.environ, "CONTAINERS_CONF": str(conf)}
    process = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{sock}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        # conmon writes an `oom` marker file into its working directory when a container hits
        # its memory limit: keep that out of the checkout.
        cwd=state_dir,
        start_new_session=True,  # a Ctrl-C in pytest must not kill it before we clean up
    )
    service = PodmanService(process=process, socket_path=sock, state_dir=state_dir)
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"podman system service exited with {process.returncode}: "
                f"{(state_dir / 'service.log').read_text()[-2000:]}"
            )
        if sock.exists() and _answers(service.docker_host):
            return service
        time.sleep(0.1)
    service.stop()
    raise RuntimeError(f"podman system service did not answer on {sock} in {ready_timeout_s}s")


def _answers(base_url: str) -> bool:
    try:
        client = docker.DockerClient(base_url=base_url, timeout=5)
    except DockerException:
        return False
    try:
        return bool(client.ping())
    except Exception:
        return False
    finally:
        client.close()


@contextlib.contextmanager
def engine(timeout_s: int = 300) -> Iterator[docker.DockerClient | None]:
    """Yield a client for DOCKER_HOST if it answers, else for a Podman we start, else None."""
    host = os.environ.get("DOCKER_HOST")
    if host and _answers(host):
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
        service = start_podman_service(Path(tmp))
        client = docker.DockerClient(base_url=service.docker_host, timeout=timeout_s)
        try:
            yield client
        finally:
            client.close()
            service.stop()


def base_image_tag() -> str:
    key = hashlib.sha256(repr((BASE_SUITE, BASE_PACKAGES, BASE_FORMAT)).encode()).hexdigest()
    return f"{BASE_REPOSITORY}:{key[:16]}"


def ensure_base_image(client: docker.DockerClient) -> str:
    """The debootstrap base image's tag; built (~35 s, needs the Debian mirror) when absent."""
    tag = base_image_tag()
    try:
        client.images.get(tag)
        return tag
    except ImageNotFound:
        pass
    if shutil.which("debootstrap") is None:
        raise RuntimeError("debootstrap is not installed: apt-get install debootstrap")
    with tempfile.TemporaryDirectory(prefix="tribunal-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        cmd = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(BASE_PACKAGES)}",
            BASE_SUITE,
            str(rootfs),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"debootstrap failed ({done.returncode}): {done.stdout[-2000:]}")
        # Caches apt fetched would only bloat the image.
        shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
        tarball = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        # import_image ignores `tag` on Podman (notes §9): import, then tag the id it answers.
        answer = client.api.import_image(src=str(tarball), repository=BASE_REPOSITORY)
        image_id = _imported_id(answer)
    repository, _, version = tag.partition(":")
    client.images.get(image_id).tag(repository, version)
    # The import also tagged it :latest; drop that name (the image keeps its versioned tag).
    with contextlib.suppress(DockerException):
        client.images.remove(f"{BASE_REPOSITORY}:latest")
    return tag


def _imported_id(answer: object) -> str:
    """The image id in import_image's answer (a JSON stream whose last status is the id)."""
    import json

    text = answer.decode() if isinstance(answer, bytes) else str(answer)
    image_id = ""
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        status = data.get("status") or data.get("stream") or data.get("id") or ""
        if status.strip():
            image_id = status.strip()
    if not image_id:
        raise RuntimeError(f"import_image gave no image id: {text[:500]}")
    return image_id


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
