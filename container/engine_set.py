"""Runners on several container engines (`[docker] engines = [...]`): one DockerBackend per
engine, and the turns spread over them.

Placement. A task's turns (its key: the spec's group and workspace, the task's worktree) go to
the engine its containers are on, for as long as they live there (a turn of it running, or a
container of it held by that engine's pool): the agents' HOMEs, and so their sessions, are in
those containers. A task with none goes to the engine with the lowest load: turns placed on it
and not ended, over its `turns_at_once` (each engine has its own runner slots, container/slots.py:
the cap is per engine, since each engine's host runs its own runners); ties go to the engine
listed first.

Draining. An engine stops answering when the health checks (a ping and a look-up of the image
every `check_s`, from the moment `start` ran) fail `misses` times in a row (two by default: one
slow answer on a loaded host is no reason), or when a turn's failure says so: a turn that
failed as `crashed` or `idle_timeout`, or whose backend raised, is followed by one such check
of its engine, and a failed one drains it. A drained engine
takes no new turn; the turns running on it end at once with `engine_lost` (runners/protocol.py),
which the rooms engine records as interrupted and runs again (rooms/core/driver.py), so the turn
is placed again, on another engine. The turns' own cleanup on the lost engine (killing the run)
is left running in the background: on a remote engine that vanished it may take a client
timeout, and the turn must not wait for it.

An engine that answers the health check again is put back in service, after its pool adopted
what it left (container/docker_pool.py `adopt`: every run still recorded in a container is
killed, since its turn was already run again elsewhere, and containers are reused or removed).

Every engine must see the same files at the same paths: the task worktrees (and their git
metadata) and the credential proxy's socket folder are bind-mounted by path (README "Running at
scale"). With one engine the bot uses its DockerBackend directly, as before: none of this runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from container.docker_backend import DockerBackend
from container.endpoints import Endpoint, answers
from runners.protocol import CRASHED, ENGINE_LOST, IDLE_TIMEOUT, RunEvent, RunSpec, error

log = logging.getLogger(__name__)

CHECK_S = 10.0  # between two health checks of every engine
MISSES = 2  # health checks failed in a row that drain an engine
PING_TIMEOUT_S = 5
CLOSE_WAIT_S = 30.0  # a drained engine's containers are removed within this, or left
# Failures that a lost engine causes (the exec's stream ended, a call to the engine failed, a
# remote engine's stream went silent): after one of these, the engine is asked whether it lives.
SUSPECT = frozenset({CRASHED, IDLE_TIMEOUT})

TaskKey = tuple[str, str]


@dataclass
class Engine:
    endpoint: Endpoint
    backend: DockerBackend
    drained: str | None = None  # why it was drained; None: in service
    drained_at: float | None = None  # wall clock
    active: int = 0  # turns placed on it that have not ended
    missed: int = 0  # health checks failed in a row
    lost: asyncio.Event = field(default_factory=asyncio.Event)  # set while drained

    @property
    def name(self) -> str:
        return self.endpoint.name

    @property
    def load(self) -> float:
        return self.active / self.backend.slots.size


class NoEngine(RuntimeError):
    """No engine of the set could be started."""


class EngineSet:
    """A rooms `Runner` over several DockerBackends (structurally, like DockerBackend)."""

    def __init__(
        self,
        engines: Sequence[tuple[Endpoint, DockerBackend]],
        *,
        check_s: float = CHECK_S,
        ping_timeout_s: int = PING_TIMEOUT_S,
        misses: int = MISSES,
        wall: Callable[[], float] = time.time,
    ) -> None:
        if not engines:
            raise ValueError("an EngineSet needs at least one engine")
        self.engines = [Engine(endpoint, backend) for endpoint, backend in engines]
        self.check_s = check_s
        self.ping_timeout_s = ping_timeout_s
        self.misses = misses
        self.wall = wall
        self._affinity: dict[TaskKey, Engine] = {}
        self._running: dict[TaskKey, int] = {}  # turns of a task not ended, on its engine
        self._monitor: asyncio.Task[None] | None = None
        self._cleanups: set[asyncio.Future[Any]] = set()
        self._started = False

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> tuple[int, int]:
        """Adopt what each engine holds of this instance (DockerBackend.start); an engine that
        fails here is drained. Raises NoEngine when none starts. Starts the health checks."""
        self._started = True
        reused = removed = 0
        reasons = []
        for engine in self.engines:
            why = await asyncio.to_thread(self._answers, engine)
            if why is not None:
                reasons.append(f"{engine.name}: {why}")
                self._drain(engine, why)
                continue
            try:
                r, m = await engine.backend.start()
            except Exception as exc:
                reasons.append(f"{engine.name}: {exc}")
                self._drain(engine, f"it failed at start: {exc}")
                continue
            reused, removed = reused + r, removed + m
        if all(e.drained for e in self.engines):
            raise NoEngine("no container engine could be started: " + "; ".join(reasons))
        if self._monitor is None:
            self._monitor = asyncio.create_task(self._watch(), name="engine-health")
        return reused, removed

    async def close(self) -> int:
        """Stop the health checks and remove this instance's containers on every engine (a
        drained one is tried, for at most CLOSE_WAIT_S); returns how many were removed."""
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._monitor
            self._monitor = None
        removed = 0
        for engine in self.engines:
            try:
                removed += await asyncio.wait_for(engine.backend.close(), CLOSE_WAIT_S)
            except Exception as exc:
                if engine.drained is None:
                    raise
                log.warning(
                    "drained engine %s: its containers were not removed: %s", engine.name, exc
                )
        return removed

    def engine_notes(self) -> list[str]:
        """One line per drained engine, for `status`."""
        notes = []
        for e in self.engines:
            if e.drained is not None:
                since = time.strftime("%H:%M:%S UTC", time.gmtime(e.drained_at or 0.0))
                notes.append(
                    f"Container engine {e.name} is drained since {since} ({e.drained}): "
                    f"turns run on the other engines until it answers again."
                )
        return notes

    # -- turns -----------------------------------------------------------------------------------

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        if not self._started:
            await self.start()
        key: TaskKey = (spec.group, spec.workspace or "")
        engine = self.place(key)
        if engine is None:
            why = "; ".join(f"{e.name}: {e.drained}" for e in self.engines)
            yield error(CRASHED, f"no container engine answers ({why})")
            return
        engine.active += 1
        self._running[key] = self._running.get(key, 0) + 1
        try:
            async for event in self._run_on(engine, spec):
                yield event
        finally:
            engine.active -= 1
            self._running[key] -= 1
            if not self._running[key]:
                del self._running[key]

    def place(self, key: TaskKey) -> Engine | None:
        """The engine for a turn of the task `key` (the module docstring's rule); None when
        every engine is drained."""
        live = [e for e in self.engines if e.drained is None]
        if not live:
            return None
        kept = self._affinity.get(key)
        alive = kept is not None and kept.drained is None
        if kept is not None and alive and (self._running.get(key) or _holds(kept.backend, key)):
            return kept
        best = min(live, key=lambda e: e.load)  # min keeps the first of equals: list order
        self._affinity[key] = best
        return best

    def engine_of(self, key: TaskKey) -> Engine | None:
        """The engine the task's containers are kept on (tests, the bench)."""
        return self._affinity.get(key)

    async def _run_on(self, engine: Engine, spec: RunSpec) -> AsyncIterator[RunEvent]:
        events = engine.backend.run(spec).__aiter__()
        lost = asyncio.ensure_future(engine.lost.wait())
        step: asyncio.Future[RunEvent] | None = None
        held: RunEvent | None = None  # a failure, sent once we know whether the engine lives
        raised: Exception | None = None
        abandoned = False
        try:
            while True:
                step = asyncio.ensure_future(events.__anext__())
                await asyncio.wait({step, lost}, return_when=asyncio.FIRST_COMPLETED)
                if not step.done():
                    abandoned = True  # the engine was drained meanwhile
                    break
                try:
                    event = step.result()
                except StopAsyncIteration:
                    break
                except Exception as exc:  # e.g. the engine's socket went away mid-call
                    raised = exc
                    break
                finally:
                    if step.done():
                        step = None
                if event.kind == "error":
                    held = event  # a backend's error is its last event
                    continue
                yield event
        finally:
            lost.cancel()
            if step is not None and not step.done():
                step.cancel()  # the backend's own cleanup kills the run in its container
                if abandoned:
                    # In the background: a vanished engine can keep it waiting for a client
                    # timeout, and the turn must not wait for that.
                    self._cleanups.add(step)
                    step.add_done_callback(self._cleanups.discard)
                else:  # we were cancelled or closed (a stop): the run ends before we do
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await step
            else:
                aclose = getattr(events, "aclose", None)
                if aclose is not None:
                    await aclose()
        if abandoned or raised is not None or (held is not None and held.code in SUSPECT):
            reason = engine.drained
            if reason is None:
                reason = await asyncio.to_thread(self._answers, engine)
            if reason is not None:
                self._drain(engine, reason)
                yield error(
                    ENGINE_LOST,
                    f"the container engine {engine.name} stopped answering ({reason}); it is "
                    f"drained and the turn runs again on another engine",
                )
                return
        if raised is not None:
            yield error(CRASHED, f"the docker backend raised {type(raised).__name__}: {raised}")
        elif held is not None:
            yield held

    # -- health ----------------------------------------------------------------------------------

    def _answers(self, engine: Engine) -> str | None:
        """None when the engine answers and holds the runner image; else why not (blocking)."""
        return answers(engine.endpoint, engine.backend.config.image, self.ping_timeout_s)

    def _drain(self, engine: Engine, reason: str) -> None:
        if engine.drained is not None:
            return
        engine.drained, engine.drained_at = reason, self.wall()
        engine.lost.set()
        for key in [k for k, e in self._affinity.items() if e is engine]:
            del self._affinity[key]
        log.warning("container engine %s is drained: %s", engine.name, reason)

    async def _reinstate(self, engine: Engine) -> None:
        try:
            reused, removed = await engine.backend.start()
        except Exception as exc:
            log.info("container engine %s answers, but adopting failed: %s", engine.name, exc)
            return
        engine.lost = asyncio.Event()
        engine.drained = engine.drained_at = None
        log.warning(
            "container engine %s answers again: back in service (%d container(s) reused, "
            "%d removed)",
            engine.name,
            reused,
            removed,
        )

    async def check(self) -> None:
        """One health check of every engine (the monitor's round; tests call it directly)."""

        async def one(engine: Engine) -> None:
            reason = await asyncio.to_thread(self._answers, engine)
            if reason is None:
                engine.missed = 0
                if engine.drained is not None:
                    await self._reinstate(engine)
                return
            engine.missed += 1
            if engine.missed >= self.misses:
                self._drain(engine, reason)

        await asyncio.gather(*(one(e) for e in self.engines))

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.check_s)
            try:
                await self.check()
            except Exception:  # a check must never end the monitor
                log.exception("engine health check failed")


def _holds(backend: DockerBackend, key: TaskKey) -> bool:
    group, workspace = key
    return any(k[0] == group and k[2] == workspace for k in backend.pool.held())


def engine_notes(runner: object) -> list[str]:
    """The drained engines' lines of a runner (an EngineSet, or a wrapper around one that
    forwards `engine_notes`); none for any other runner."""
    notes = getattr(runner, "engine_notes", None)
    return list(notes()) if callable(notes) else []
