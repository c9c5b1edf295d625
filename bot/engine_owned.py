"""The bot's own engine: with `backend = "auto"` and no engine answering, a Podman of our own.

When the engine of the settings does not answer and `podman` is installed (bot/run installs it
as root), `start_owned_engine` starts a private `podman system service` on
`<data>/engine/podman.sock` (container/podman_service.py), first makes sure it can run a
container at all (container/run_probe.py: a fraction of a second), then builds the runner image
there when it is missing (FROM the registry-free debootstrap base, container/base_image.py, so
only Debian's mirror and the package registries are needed), and answers the settings pointed at
it. The caller (bot/backend.py running_backend) stops the service when the bot closes. Each slow
step prints a line on `out` as it starts and one with its elapsed time when it ends.

When anything fails (no podman, the service does not start, the image cannot be built) the
service is stopped again and `OwnedEngineError` says why in one line (the whole text goes to
`<data>/engine/failure.log`); the caller then falls back to local with the warning. A machine
whose Podman cannot run containers (no nesting, no fuse) is `ContainersCannotRun`, and is
remembered in `<data>/engine/containers-cannot-run`: later starts go straight to local without
starting anything (delete the file to probe again, e.g. after moving to another machine).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from bot.settings import Settings
from container.base_image import BaseImageError, ensure_base_image
from container.docker_backend import connect
from container.image import ImageError, build_image, default_inputs
from container.podman_service import PodmanService, PodmanServiceError, podman_installed
from container.run_probe import cannot_run, one_line

BUILD_TIMEOUT_S = 1800  # a first build of the runner image fetches ~800 MB of wheels
PROBE_TIMEOUT_S = 60
CANNOT_RUN_NAME = "containers-cannot-run"
FAILURE_LOG_NAME = "failure.log"


class OwnedEngineError(RuntimeError):
    """The bot's own engine could not be made ready; the message says why, in one line."""


class ContainersCannotRun(OwnedEngineError):
    """Podman runs, but cannot run a container on this machine; the message is its reason."""


def engine_folder(settings: Settings) -> Path:
    return settings.data.resolve() / "engine"


def cannot_run_file(settings: Settings) -> Path:
    return engine_folder(settings) / CANNOT_RUN_NAME


def remembered_cannot_run(settings: Settings) -> str | None:
    """The reason an earlier start found that containers cannot run here, if it did."""
    try:
        return cannot_run_file(settings).read_text().strip() or "no reason recorded"
    except OSError:
        return None


def wants_owned_engine(settings: Settings, engine_reachable: bool) -> bool:
    """Only `auto` with no engine answering (and none listed in `[docker] engines`), only when
    podman is there to serve one, and not where an earlier start found that containers cannot
    run."""
    return (
        settings.backend == "auto"
        and not settings.docker.engines  # engines named in the settings: only those
        and not engine_reachable
        and podman_installed()
        and remembered_cannot_run(settings) is None
    )


def start_owned_engine(settings: Settings, out: TextIO) -> tuple[PodmanService, Settings]:
    """The started service and the settings pointed at it (blocking: run it in a thread)."""
    service = start_service(settings, out)
    owned = settings.model_copy(update={"docker_host": service.docker_host})
    try:
        probe_containers(owned)
        ensure_runner_image(owned, out)
    except BaseException:
        service.stop()
        raise
    return service, owned


def start_service(settings: Settings, out: TextIO) -> PodmanService:
    """The bot's own Podman service, started (raises OwnedEngineError when it does not)."""
    service = PodmanService(engine_folder(settings))
    starting = f"no engine answers: starting the bot's own Podman on {service.socket_path}"
    try:
        with step(out, starting):
            service.start()
    except PodmanServiceError as exc:
        raise _failed(settings, "its Podman service did not start", str(exc)) from exc
    return service


def probe_containers(settings: Settings) -> None:
    """Run one probe container on the engine of the settings; ContainersCannotRun (and the
    reason remembered) when it cannot."""
    client = connect(settings.docker_host, timeout=PROBE_TIMEOUT_S)
    try:
        reason = cannot_run(client)
    finally:
        client.close()
    if reason is None:
        return
    path = cannot_run_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(reason + "\n")
    raise ContainersCannotRun(reason)  # the caller's warning says it, once


def ensure_runner_image(settings: Settings, out: TextIO) -> None:
    """Build the configured image on the engine of the settings when it does not have it."""
    from docker.errors import ImageNotFound

    image = settings.docker.image
    client = connect(settings.docker_host, timeout=BUILD_TIMEOUT_S)
    try:
        try:
            client.images.get(image)
            return
        except ImageNotFound:
            pass
        say(out, f"the engine has no image {image}: building it (a few minutes the first time)")
        try:
            base = _base_image(client, out)
            with step(out, "fetching the runner image's inputs (wheels from PyPI, Codex from npm)"):
                inputs = default_inputs(fetch=True)
            with step(out, f"building {image} FROM {base}"):
                build_image(client, tag=image, base=base, inputs=inputs)
        except (BaseImageError, ImageError) as exc:
            what = f"the runner image {image} could not be built"
            raise _failed(settings, what, str(exc)) from exc
    finally:
        client.close()


def _base_image(client: object, out: TextIO) -> str:
    """The debootstrap base (container/base_image.py), with its elapsed time when built."""
    said: list[str] = []

    def log(line: str) -> None:
        said.append(line)
        say(out, line)

    started = time.monotonic()
    base = ensure_base_image(client, log=log)
    if said:
        say(out, f"built the base image {base}: done in {elapsed(time.monotonic() - started)}")
    return base


def _failed(settings: Settings, what: str, detail: str) -> OwnedEngineError:
    """The error in one line; the whole detail (a build log, a service log) in a file."""
    log_path = engine_folder(settings) / FAILURE_LOG_NAME
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        log_path.write_text(f"{what}:\n{detail}\n")
        where = f" (details in {log_path})"
    except OSError:
        where = ""
    first = next((line for line in detail.splitlines() if line.strip()), "")
    return OwnedEngineError(f"{what}: {one_line(first)}{where}")


@contextlib.contextmanager
def step(out: TextIO, line: str) -> Iterator[None]:
    """A slow step: its line when it starts, and its elapsed time when it has ended."""
    say(out, line)
    started = time.monotonic()
    yield
    say(out, f"{line}: done in {elapsed(time.monotonic() - started)}")


def elapsed(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60:02d} s"


def say(out: TextIO, line: str) -> None:
    out.write(f"tribunal: {line}\n")
    out.flush()
