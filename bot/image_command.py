"""`tribunal image fetch|build`, building on the engine the bot itself would use (issue 27 #3).

`build` takes the engine of the settings (DOCKER_HOST, or `[docker] host`) when it answers;
with `backend = "auto"` and none answering, the bot's own Podman (bot/engine_owned.py): the one
a running bot serves on `<data>/engine/podman.sock`, else one started for the build (after a
probe container) and stopped again. On the bot's own engine the default base is the
registry-free debootstrap one (container/base_image.py), as the bot builds it at its start.
No usable engine is one line that says what to do, never the docker SDK's dump.

With `[docker] engines`, `build` puts the image on every engine of the list: built on the first
that answers, loaded into the others (container/image_spread.py), one line per engine; an engine
that is down is skipped, and the exit status is 1 naming it.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from bot.backend import engine_address, engine_endpoints, probe_endpoint, short_reason
from bot.engine_owned import (
    OwnedEngineError,
    engine_folder,
    probe_containers,
    remembered_cannot_run,
    say,
    start_service,
)
from bot.settings import Settings, load_settings
from container.docker_backend import connect
from container.endpoints import Endpoint
from container.image import DEFAULT_BASE, DEFAULT_TAG, ImageError, build_image, default_inputs
from container.image_spread import spread_image
from container.podman_service import SOCKET_NAME, answers, podman_installed

BUILD_TIMEOUT_S = 1800
NO_ENGINE = (
    "start Docker or Podman and point DOCKER_HOST at it, or install podman (`apt-get install "
    "podman runc`, as `bot/run` does as root) so the bot builds on its own"
)


class NoEngine(RuntimeError):
    """No engine to build on; the message says what to do."""


def add_image_command(sub: Any) -> None:
    """Register `image build` and `image fetch` on bot/cli.py's subparsers."""
    from container.image import add_image_command as add_to

    add_to(sub, build_handler=_build)


def _build(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    if settings.docker.engines:
        return _build_on_every_engine(args, settings)
    try:
        with engine_for_build(settings) as (host, owned):
            client = connect(host, timeout=BUILD_TIMEOUT_S)
            try:
                base = args.base or (_own_base(client) if owned else DEFAULT_BASE)
                say(sys.stderr, f"building {args.tag} FROM {base} on {host}")
                image_id = build_image(
                    client,
                    tag=args.tag,
                    base=base,
                    context_dir=args.context_dir,
                    inputs=default_inputs(fetch=True),
                    log=lambda line: print(line, end=""),
                )
            finally:
                client.close()
    except (NoEngine, OwnedEngineError) as exc:
        print(f"tribunal image: {exc}", file=sys.stderr)
        return 1
    except ImageError as exc:
        print(f"tribunal image: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the docker SDK's errors: one line, not its dump
        from docker.errors import DockerException

        if not isinstance(exc, DockerException):
            raise
        print(f"tribunal image: the engine failed: {short_reason(exc)}", file=sys.stderr)
        return 1
    print(f"built {args.tag} ({image_id})")
    return 0


def _build_on_every_engine(args: argparse.Namespace, settings: Settings) -> int:
    """`[docker] engines`: built once, loaded into the others (container/image_spread.py); one
    line per engine on stdout; exit 1 naming every engine left without the image."""
    endpoints = engine_endpoints(settings)
    base = args.base or DEFAULT_BASE
    say(sys.stderr, f"building {args.tag} FROM {base} on the first of {len(endpoints)} engines")

    def build(client: Any) -> str:
        return build_image(
            client,
            tag=args.tag,
            base=base,
            context_dir=args.context_dir,
            inputs=default_inputs(fetch=True),
            log=lambda line: print(line, end="", file=sys.stderr),
        )

    def probe(endpoint: Endpoint) -> str | None:  # the doctor's words for a down engine
        found = probe_endpoint(endpoint, endpoint.name, args.tag, name=False)
        return None if found.reachable else found.error

    try:
        outcomes = spread_image(
            endpoints, args.tag, build, connect_timeout_s=BUILD_TIMEOUT_S, say=print, probe=probe
        )
    except ImageError as exc:
        print(f"tribunal image: {exc}", file=sys.stderr)
        return 1
    missing = [o for o in outcomes if not o.ok]
    if missing:
        names = ", ".join(o.engine for o in missing)
        print(
            f"tribunal image: {args.tag} is not on {len(missing)} of {len(outcomes)} engines: "
            f"{names}; the bot drains an engine without it until it is there (run this again "
            "once they answer)",
            file=sys.stderr,
        )
        return 1
    return 0


def _own_base(client: Any) -> str:
    from container.base_image import BaseImageError, ensure_base_image

    try:
        return ensure_base_image(client, log=lambda line: say(sys.stderr, line))
    except BaseImageError as exc:
        raise ImageError(f"the base image could not be made: {exc}") from exc


@contextlib.contextmanager
def engine_for_build(settings: Settings) -> Iterator[tuple[str, bool]]:
    """(DOCKER_HOST-style address, whether it is the bot's own engine) to build on."""
    configured = settings.docker_host or "unix:///var/run/docker.sock"
    if answers(configured):
        yield configured, False
        return
    why = f"no engine answers at {engine_address(settings)}"
    if settings.backend != "auto" or not podman_installed():
        raise NoEngine(f"{why}: {NO_ENGINE}")
    remembered = remembered_cannot_run(settings)
    if remembered is not None:
        raise NoEngine(
            f"{why}, and containers cannot run on this machine ({remembered}): an image would be "
            "of no use here; run the bot with TRIBUNAL_BACKEND=local"
        )
    own = f"unix://{engine_folder(settings) / SOCKET_NAME}"
    if answers(own):  # a running bot's: build there, leave it running
        yield own, True
        return
    service = start_service(settings, sys.stderr)
    try:
        probe_containers(settings.model_copy(update={"docker_host": service.docker_host}))
        yield service.docker_host, True
    finally:
        service.stop()


__all__ = ["DEFAULT_TAG", "add_image_command", "engine_for_build"]
