"""The engine `tribunal doctor` checks: the one the bot really uses (issue 27 #2).

With `backend = "auto"` and no engine at DOCKER_HOST, the bot runs on its own Podman
(bot/engine_owned.py), so that is the engine to check: the one a running bot serves on
`<data>/engine/podman.sock`, else one started here the way the bot starts it (and stopped again
before the doctor ends). On whichever engine is checked, one probe container runs
(container/run_probe.py): an engine that answers but cannot run a container is no engine for
the turns. A machine where an earlier start found that containers cannot run is taken at its
word (`<data>/engine/containers-cannot-run`).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass

from bot.backend import EngineProbe, engine_endpoints, probe_engine
from bot.engine_owned import (
    ContainersCannotRun,
    OwnedEngineError,
    engine_folder,
    probe_containers,
    remembered_cannot_run,
    start_service,
)
from bot.settings import Settings
from container.podman_service import SOCKET_NAME, answers, podman_installed
from container.run_probe import cannot_run

PROBE_TIMEOUT_S = 60


@dataclass(frozen=True)
class EngineFound:
    settings: Settings  # pointed at the engine checked
    probe: EngineProbe
    owned: str | None = None  # how the bot's own Podman was found, when it is the one checked
    cannot_run: str | None = None  # why a container cannot run on it
    owned_error: str | None = None  # why the bot's own Podman could not be started


@contextlib.contextmanager
def engine_to_check(settings: Settings) -> Iterator[EngineFound]:
    """The engine the bot would run its turns on, probed; a service started for the check is
    stopped when the block ends."""
    probe = probe_engine(settings, name=True)
    if settings.backend == "local":
        yield EngineFound(settings, probe)
        return
    if settings.docker.engines:
        # Several engines: the first usable one stands for them here (the runner binaries are
        # checked in its image); bot/doctor/engines.py checks each.
        chosen = next(
            (e for e in settings.docker.engines if e.endpoint().name == probe.where),
            settings.docker.engines[0],
        )
        docker = settings.docker.model_copy(update={"engines": [chosen]})
        narrowed = settings.model_copy(update={"docker": docker})
        found = _cannot_run(narrowed) if probe.reachable else None
        yield EngineFound(narrowed, probe, cannot_run=found)
        return
    if probe.reachable:
        yield EngineFound(settings, probe, cannot_run=_cannot_run(settings))
        return
    if settings.backend != "auto" or not podman_installed():
        yield EngineFound(settings, probe)
        return
    remembered = remembered_cannot_run(settings)
    if remembered is not None:
        yield EngineFound(settings, probe, owned="found by an earlier start", cannot_run=remembered)
        return
    own = settings.model_copy(
        update={"docker_host": f"unix://{engine_folder(settings) / SOCKET_NAME}"}
    )
    if answers(str(own.docker_host)):
        running = probe_engine(own, name=True)
        yield EngineFound(own, running, "the bot's, running", _cannot_run(own))
        return
    try:
        service = start_service(settings, io.StringIO())
    except OwnedEngineError as exc:
        yield EngineFound(settings, probe, owned_error=str(exc))
        return
    try:
        own = settings.model_copy(update={"docker_host": service.docker_host})
        reason = None
        try:
            probe_containers(own)  # remembered for the bot's next start too
        except ContainersCannotRun as exc:
            reason = str(exc)
        started = probe_engine(own, name=True)
        yield EngineFound(own, started, "started for this check as the bot starts it", reason)
    finally:
        service.stop()


def _cannot_run(settings: Settings) -> str | None:
    try:
        client = engine_endpoints(settings)[0].connect(timeout=PROBE_TIMEOUT_S)
    except Exception as exc:  # the engine went away since its ping
        return f"the engine stopped answering: {exc}"
    try:
        return cannot_run(client)
    finally:
        client.close()
