"""Which runner backend the bot uses (`local` or `docker`), and the engine facts behind the choice.

`TRIBUNAL_BACKEND` (Settings.backend):
- `local`: turns run as plain processes on this machine (container/local.py). No engine is asked.
- `docker`: turns run in containers (container/docker_backend.py). The engine must answer a ping
  and hold the configured image; otherwise `BackendUnavailable`, a SettingsError, so the CLI
  prints what to do and exits 78 instead of failing at the first turn.
- `auto` (the default): docker when the engine answers AND has the image. When no engine answers
  and `podman` is installed, the bot starts its own Podman service and builds the image there
  (bot/engine_owned.py), and stops that service when it closes. Otherwise local, with a loud
  warning that the turns are not isolated and what to do about it.

`running_backend` is what `open_app` uses: choose, announce, build, and for docker adopt the
containers an earlier run of this instance left (`start`) before the first turn and remove this
instance's containers (`close`) once the engine has stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from bot.adapter import platform_secrets
from bot.engine_owned import (
    ContainersCannotRun,
    OwnedEngineError,
    cannot_run_file,
    remembered_cannot_run,
    start_owned_engine,
    wants_owned_engine,
)
from bot.hardening import become_undumpable
from bot.proxy import (
    container_endpoint,
    local_endpoint,
    running_local_proxy,
    running_proxy,
    server_tools_groups,
)
from bot.settings import Settings
from bot.settings_sections import SettingsError
from container.docker_backend import DockerBackend
from container.docker_pool import DockerConfig
from container.endpoints import Endpoint
from container.engine_set import EngineSet, engine_notes
from container.local import LocalBackend
from container.proxy.runner import ProxiedRunner
from rooms.base.ports import Runner
from runners.protocol import RunEvent, RunSpec

log = logging.getLogger(__name__)

BackendKind = Literal["local", "docker"]
PING_TIMEOUT_S = 5  # a ping is one small request; a slower engine is not usable anyway
DEFAULT_SOCKET = "unix:///var/run/docker.sock"
BUILD_HINT = "run `tribunal image build` (or set TRIBUNAL_DOCKER__IMAGE to the runner image)"
ENGINE_HINT = "start Docker or Podman and point DOCKER_HOST at its socket"


class BackendUnavailable(SettingsError):
    """`backend = "docker"` was asked for, but the engine or the image is not there."""


@dataclass(frozen=True)
class EngineProbe:
    """What the engine at `where` answered: its API version, its name and version, and the id
    of the configured image; `error` / `image_error` say why one of them is missing."""

    where: str
    image: str
    api_version: str | None = None
    engine: str | None = None  # e.g. "Podman Engine 4.3.1"
    error: str | None = None
    image_id: str | None = None
    image_error: str | None = None

    @property
    def reachable(self) -> bool:
        return self.api_version is not None

    @property
    def usable(self) -> bool:
        return self.reachable and self.image_id is not None

    def why_not(self) -> str:
        """Why the docker backend cannot run here, in words a person can act on."""
        if not self.reachable:
            return f"no Docker-API engine answers at {self.where} ({self.error})"
        return f"the engine at {self.where} has no image {self.image} ({self.image_error})"

    def hint(self) -> str:
        return ENGINE_HINT if not self.reachable else BUILD_HINT


@dataclass(frozen=True)
class BackendChoice:
    kind: BackendKind
    reason: str  # why this backend, for the doctor and the log
    warning: str | None = None  # printed loudly when set (auto fell back to local)
    probe: EngineProbe | None = None


def engine_address(settings: Settings) -> str:
    if settings.docker.engines:
        return ", ".join(e.host for e in settings.docker.engines)
    return settings.docker_host or f"{DEFAULT_SOCKET} (the default socket)"


def engine_endpoints(settings: Settings) -> list[Endpoint]:
    """The engines the turns run on: `[docker] engines`, else the one of DOCKER_HOST."""
    if settings.docker.engines:
        return [e.endpoint() for e in settings.docker.engines]
    return [Endpoint(settings.docker_host)]


def probe_engine(settings: Settings, *, name: bool = False) -> EngineProbe:
    """Ping the engine of the settings and look up the configured image; with `name`, also ask
    the engine's name and version (one more /version call, ~0.4 s on Podman 4.3: the doctor
    wants it, the start-up choice does not). Never raises: the docker SDK raises many kinds of
    errors, and each means "not usable" here. With `[docker] engines`, the first usable engine
    stands for them all (the others are drained at start, container/engine_set.py); the doctor
    checks each one (`probe_each`)."""
    if settings.docker.engines:
        probes = probe_each(settings, name=name)
        return next((p for p in probes if p.usable), probes[0])
    where = engine_address(settings)
    return probe_endpoint(Endpoint(settings.docker_host), where, settings.docker.image, name=name)


def probe_each(settings: Settings, *, name: bool = False) -> list[EngineProbe]:
    """One probe per engine the turns may run on (`engine_endpoints`)."""
    if not settings.docker.engines:
        return [probe_engine(settings, name=name)]
    image = settings.docker.image
    return [probe_endpoint(e, e.name, image, name=name) for e in engine_endpoints(settings)]


def probe_endpoint(endpoint: Endpoint, where: str, image: str, *, name: bool) -> EngineProbe:
    """`probe_engine` for one engine."""
    try:
        client = endpoint.connect(timeout=PING_TIMEOUT_S)
    except Exception as exc:  # the SDK negotiates the API version on connect
        return EngineProbe(where, image, error=short_reason(exc))
    try:
        try:
            client.ping()
            api_version = str(client.api.api_version)
        except Exception as exc:
            return EngineProbe(where, image, error=short_reason(exc))
        engine = _engine_name(client) if name else None
        try:
            image_id: str | None = str(client.images.get(image).id)
            image_error = None
        except Exception as exc:
            image_id, image_error = None, _image_reason(exc)
        return EngineProbe(where, image, api_version, engine, None, image_id, image_error)
    finally:
        client.close()


def _engine_name(client: Any) -> str | None:
    try:
        version = client.version()
    except Exception:  # the ping answered; a name is only a nicety
        return None
    components = version.get("Components") or [{}]
    name = components[0].get("Name") or "engine"
    return f"{name} {version.get('Version', '?')}"


def _image_reason(exc: Exception) -> str:
    from docker.errors import ImageNotFound

    return "not found" if isinstance(exc, ImageNotFound) else short_reason(exc)


def short_reason(exc: BaseException) -> str:
    """One line: the operating system's word when a socket error lies underneath (the docker SDK
    wraps it two or three times, e.g. "No such file or directory" for a missing socket file),
    else the first line of the message."""
    os_error = _os_error_in(exc)
    if os_error is not None and os_error.strerror:
        return str(os_error.strerror)
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _os_error_in(exc: BaseException) -> OSError | None:
    # Breadth-first through causes, contexts and exception arguments (requests and urllib3 keep
    # the socket's error in args); bounded, since chains can be long or cyclic.
    queue: list[object] = [exc]
    seen = 0
    while queue and seen < 50:
        item = queue.pop(0)
        seen += 1
        if isinstance(item, tuple):
            queue.extend(item)
            continue
        if not isinstance(item, BaseException):
            continue
        if isinstance(item, OSError) and item.strerror:
            return item
        queue.extend([item.__cause__, item.__context__, *item.args])
    return None


def choose_backend(
    settings: Settings, probe: Callable[[Settings], EngineProbe] = probe_engine
) -> BackendChoice:
    """The backend to run turns on, by the rules of the module docstring. Blocking (it may ask
    the engine). Raises BackendUnavailable for an explicit `docker` that cannot work."""
    if settings.backend == "local":
        return BackendChoice("local", "set by TRIBUNAL_BACKEND; the turns run unisolated here")
    found = probe(settings)
    if settings.backend == "docker":
        if not found.usable:
            raise BackendUnavailable(
                [
                    f"settings: backend (TRIBUNAL_BACKEND) is docker, but {found.why_not()}: "
                    f"{found.hint()}; or set TRIBUNAL_BACKEND=local to run the turns unisolated"
                ]
            )
        return BackendChoice("docker", f"set by TRIBUNAL_BACKEND; {_found(found)}", probe=found)
    if found.usable:
        return BackendChoice("docker", f"auto: {_found(found)}", probe=found)
    warning = (
        f"WARNING: the turns run as plain processes on this machine, NOT isolated in "
        f"containers: {found.why_not()}. To isolate them: {found.hint()}"
        + ("" if found.reachable else ", then run `tribunal image build`")
        + ". Set TRIBUNAL_BACKEND=local to run locally without this warning."
    )
    return BackendChoice("local", f"auto: {found.why_not()}", warning, found)


def _found(probe: EngineProbe) -> str:
    return f"the engine at {probe.where} has the image {probe.image}"


def docker_config(settings: Settings, proxy_socket_dir: Path | None = None) -> DockerConfig:
    d = settings.docker
    return DockerConfig(
        image=d.image,
        instance=settings.docker_instance,
        network_mode=d.network_mode,
        mem_limit=d.mem_limit,
        nano_cpus=d.nano_cpus,
        pids_limit=d.pids_limit,
        max_idle_s=d.retire_idle_s,
        max_per_group=d.max_containers_per_group,
        proxy_socket_dir=str(proxy_socket_dir) if proxy_socket_dir else None,
    )


# Spare runners the local backend keeps started ahead (container/spares.py): one hides a
# runner's start from the next turn; more would only help bursts, and each is an idle process.
LOCAL_SPARES = 1


def make_backend(settings: Settings, choice: BackendChoice | None = None) -> Runner:
    """The runner backend of the choice (made by `choose_backend` when not given), before
    credentials are added. A DockerBackend comes bare: `running_backend` is what starts and
    closes it and caps the timeouts (used on its own, it adopts at its first turn)."""
    choice = choice or choose_backend(settings)
    if choice.kind == "docker":
        return make_docker_backend(settings)
    # A HOME per (group, role) of our own, so the agents' state stays out of the user's ~ and
    # away from the data folder: an agent's HOME must not be where the database is.
    homes = runner_homes(settings)
    homes.mkdir(parents=True, exist_ok=True, mode=0o700)
    return LocalBackend(
        homes=str(homes),
        secrets=platform_secrets(),
        turns_at_once=settings.limits.turns_at_once,
        spares=LOCAL_SPARES,
    )


def runner_homes(settings: Settings) -> Path:
    """Where the local backend's runners get their HOMEs: the user's state folder
    ($XDG_STATE_HOME, else ~/.local/state), per bot instance."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "tribunal" / settings.docker_instance / "homes"


def make_docker_backend(
    settings: Settings, proxy_socket_dir: Path | None = None
) -> DockerBackend | EngineSet:
    """One DockerBackend on the engine of the settings, or with several `[docker] engines` an
    EngineSet of one DockerBackend each (`turns_at_once` is then per engine)."""
    endpoints = engine_endpoints(settings)
    backends = [
        DockerBackend(
            endpoint.connect(),
            docker_config(settings, proxy_socket_dir),
            secrets=platform_secrets(),
            turns_at_once=settings.limits.turns_at_once,
        )
        for endpoint in endpoints
    ]
    if len(backends) == 1:
        return backends[0]
    return EngineSet(list(zip(endpoints, backends, strict=True)))


def clients_of(backend: DockerBackend | EngineSet) -> list[Any]:
    if isinstance(backend, EngineSet):
        return [e.backend.client for e in backend.engines]
    return [backend.client]


class TimeoutCeiling:
    """A Runner that caps each spec's timeouts (the group's) at the backend's ceilings."""

    def __init__(self, inner: Runner, idle_s: float, hard_s: float) -> None:
        self.inner = inner
        self.idle_s = idle_s
        self.hard_s = hard_s

    def engine_notes(self) -> list[str]:
        return engine_notes(self.inner)

    def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        capped = {
            "idle_timeout_s": min(spec.idle_timeout_s, self.idle_s),
            "hard_timeout_s": min(spec.hard_timeout_s, self.hard_s),
        }
        return self.inner.run(spec.model_copy(update=capped))


LOCAL_LINE = "backend local: the turns run as plain processes on this machine, unisolated"


def announce(choice: BackendChoice, out: TextIO) -> None:
    """The start banner's backend line on `out` (stderr): the warning of an auto choice that
    fell back to local (also in the log when logging is configured: unconfigured logging would
    print it a second time), or one line for the local backend asked for; nothing for docker."""
    if choice.warning is None:
        log.info("backend %s (%s)", choice.kind, choice.reason)
        if choice.kind == "local":
            out.write(f"tribunal: {LOCAL_LINE} (TRIBUNAL_BACKEND=local)\n")
            out.flush()
        return
    out.write(f"tribunal: {choice.warning}\n")
    out.flush()
    if _logged_elsewhere(out):
        log.warning("%s", choice.warning)


def _logged_elsewhere(out: TextIO) -> bool:
    """Whether logging is configured and none of its handlers writes to `out`: only then is the
    warning logged too (to a file, JSON lines elsewhere), else the person reads it twice."""
    handlers = [*logging.getLogger().handlers, *log.handlers]
    return bool(handlers) and all(getattr(h, "stream", None) is not out for h in handlers)


@asynccontextmanager
async def running_backend(
    settings: Settings, *, warn: TextIO
) -> AsyncIterator[tuple[Runner, BackendChoice]]:
    """The chosen backend, ready for turns, behind the credential proxy (started on entry,
    stopped on exit: on loopback for local, on its socket for docker, where this instance's
    containers are also adopted on entry and removed on exit)."""
    choice = await asyncio.to_thread(choose_backend, settings)
    async with contextlib.AsyncExitStack() as stack:
        engine_reachable = choice.probe is None or choice.probe.reachable
        remembered = remembered_cannot_run(settings) if settings.backend == "auto" else None
        if choice.kind == "local" and not engine_reachable and remembered is not None:
            choice = _without_owned_engine(choice, settings, ContainersCannotRun(remembered))
        elif choice.kind == "local" and wants_owned_engine(settings, engine_reachable):
            try:
                service, settings = await asyncio.to_thread(start_owned_engine, settings, warn)
            except OwnedEngineError as exc:
                choice = _without_owned_engine(choice, settings, exc)
            else:
                stack.callback(service.stop)  # last out: after the containers are removed
                choice = await asyncio.to_thread(choose_backend, settings)
        announce(choice, warn)
        if choice.kind == "local":
            # The agents run as this user: keep them out of this process's /proc entries (the
            # runners' pipes, the environment), bot/hardening.py. For good: the process is
            # the bot, and its turns run locally from now on.
            become_undumpable()
            # The local runners reach the models through the proxy too: it checks that each
            # turn's final answer is the model's (container/proxy/finals.py).
            local = await stack.enter_async_context(running_local_proxy(settings))
            backend = make_backend(settings, choice)
            if isinstance(backend, LocalBackend):  # its spare runners end with it
                stack.push_async_callback(backend.close)
            runner = ProxiedRunner(backend, local, local_endpoint(local))
            yield runner, choice
            return
        proxy, socket_folder = await stack.enter_async_context(running_proxy(settings))
        backend = await stack.enter_async_context(_running_docker(settings, socket_folder))
        runner = ProxiedRunner(
            backend,
            proxy,
            container_endpoint(),
            server_tools_groups=server_tools_groups(settings),
        )
        yield runner, choice


def _without_owned_engine(
    choice: BackendChoice, settings: Settings, exc: OwnedEngineError
) -> BackendChoice:
    """The local fallback's warning when the bot's own engine could not be used: one line, the
    real cause first, then what it means and the fix (issue 27 #4)."""
    unisolated = "so the turns run as plain processes on this machine, NOT isolated"
    quiet = "Set TRIBUNAL_BACKEND=local to run them so without this warning"
    if isinstance(exc, ContainersCannotRun):
        warning = (
            f"WARNING: containers cannot run on this machine ({exc}), {unisolated}. {quiet} "
            f"(found once, remembered in {cannot_run_file(settings)}: delete it to try again)."
        )
    else:
        warning = (
            f"WARNING: the bot's own Podman could not be made ready: {exc}; {unisolated}. "
            f"{quiet}, or point DOCKER_HOST at a working engine."
        )
    return dataclasses.replace(choice, warning=warning)


@asynccontextmanager
async def _running_docker(settings: Settings, socket_folder: Path) -> AsyncIterator[Runner]:
    backend = make_docker_backend(settings, socket_folder)
    try:
        reused, removed = await backend.start()
    except Exception as exc:  # the engine went away between the probe and now
        for client in clients_of(backend):
            await asyncio.to_thread(client.close)
        raise BackendUnavailable(
            [
                f"settings: backend docker: the engine at {engine_address(settings)} failed: "
                f"{short_reason(exc)}: {ENGINE_HINT}"
            ]
        ) from exc
    log.info(
        "docker backend, instance %s: %d container(s) reused, %d removed",
        settings.docker_instance,
        reused,
        removed,
    )
    try:
        d = settings.docker
        yield TimeoutCeiling(backend, d.idle_timeout_s, d.hard_timeout_s)
    finally:
        try:
            removed = await backend.close()
            log.info("docker backend: removed %d container(s)", removed)
        finally:
            for client in clients_of(backend):
                await asyncio.to_thread(client.close)
