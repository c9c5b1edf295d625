"""The bot's own engine: with `backend = "auto"` and no engine answering, a Podman of our own.

When the engine of the settings does not answer and `podman` is installed (bot/run installs it
as root), `start_owned_engine` starts a private `podman system service` on
`<data>/engine/podman.sock` (container/podman_service.py), builds the runner image there when it
is missing (FROM the registry-free debootstrap base, container/base_image.py, so only Debian's
mirror and the package registries are needed), and answers the settings pointed at it. The
caller (bot/backend.py running_backend) stops the service when the bot closes. Each slow step
prints a progress line on `out` as it starts.

When anything fails (no podman, the service does not start, the image cannot be built) the
service is stopped again and `OwnedEngineError` says why; the caller then falls back to local
with the warning, as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from bot.settings import Settings
from container.base_image import BaseImageError, ensure_base_image
from container.docker_backend import connect
from container.image import ImageError, build_image, default_inputs
from container.podman_service import PodmanService, PodmanServiceError, podman_installed

BUILD_TIMEOUT_S = 1800  # a first build of the runner image fetches ~800 MB of wheels


class OwnedEngineError(RuntimeError):
    """The bot's own engine could not be made ready; the message says why."""


def engine_folder(settings: Settings) -> Path:
    return settings.data.resolve() / "engine"


def wants_owned_engine(settings: Settings, engine_reachable: bool) -> bool:
    """Only `auto` with no engine answering, and only when podman is there to serve one."""
    return settings.backend == "auto" and not engine_reachable and podman_installed()


def start_owned_engine(settings: Settings, out: TextIO) -> tuple[PodmanService, Settings]:
    """The started service and the settings pointed at it (blocking: run it in a thread)."""
    service = PodmanService(engine_folder(settings))
    say(out, f"no engine answers: starting the bot's own Podman on {service.socket_path}")
    try:
        service.start()
    except PodmanServiceError as exc:
        raise OwnedEngineError(str(exc)) from exc
    owned = settings.model_copy(update={"docker_host": service.docker_host})
    try:
        ensure_runner_image(owned, out)
    except BaseException:
        service.stop()
        raise
    return service, owned


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
            base = ensure_base_image(client, log=lambda line: say(out, line))
            say(out, "fetching the runner image's inputs (wheels from PyPI, Codex from npm)")
            inputs = default_inputs(fetch=True)
            say(out, f"building {image} FROM {base}")
            build_image(client, tag=image, base=base, inputs=inputs)
        except (BaseImageError, ImageError) as exc:
            raise OwnedEngineError(f"the runner image {image} could not be built: {exc}") from exc
        say(out, f"built {image}")
    finally:
        client.close()


def say(out: TextIO, line: str) -> None:
    out.write(f"tribunal: {line}\n")
    out.flush()
