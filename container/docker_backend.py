"""DockerBackend: runs each turn as an exec in a long-lived container (any Docker-API engine).

Implements the rooms `Runner` port structurally. Per turn:
1. the turn waits for its room (one turn per container, i.e. per (group, role, workspace), at a
   time, in arrival order), then for a runner slot (`turns_at_once`, the same cap as the local
   backend's, container/slots.py: a turn that waits for one says so with a `queued` event);
2. the container for (group, role, workspace) is found or created (container/docker_pool.py: the
   owner's mounts the workspace read-write, every other role's read-only, and each mounts the
   worktree's git metadata read-only, container/git_mounts.py);
3. `python -P -m runners <spec.agent>` is exec'd (so one container serves claude, codex, or the
   engine's `command` runner of resolve's tests, whose `executor` container is read-only), with
   the run's environment on the exec only: a change of model or key needs no new container;
4. the request line goes to its stdin, and events are yielded as their stdout lines arrive.

An owner's turn whose workspace the container user cannot write fails at once with `setup` and
the `chown` to run (container/workspace_access.py), instead of running with every edit refused;
a task's worktree, which the engine made, is handed to the container user first when the engine
runs as root.

Environment: only `spec.env` plus the backend's `env` reach the exec, minus anything on the deny
list shared with the LocalBackend (container/limits.py: `SLACK_*`, `DISCORD_*`, `DOCKER_*`,
`*_BOT_TOKEN`, `*_APP_TOKEN`, `*_SIGNING_SECRET`): platform tokens never enter a container.
The container itself gets HOME.

Supervision follows the same rules as the LocalBackend (container/local.py), on the shared
helpers of container/limits.py and container/supervision.py: exactly one terminal event per
turn; blank lines ignored, a line that is not an event → `protocol` and kill; no event for
`idle_timeout_s` → `idle_timeout`; past `hard_timeout_s` → `hard_timeout`; more than
`max_output_bytes` (stdout and stderr together) → `output_cap`; exit without a terminal event →
`crashed` with the status and the stderr tail.
`out_of_memory` replaces both `crashed` and the runner's own `error` when the container's OOM-kill
counter (memory cgroup) went up during the run, or the runner exited 137 unbidden (Podman 4.3
never sets OOMKilled): the runner's error is therefore held until the exec has exited. The
counter as a run begins comes with the run itself (the exec wrapper's first stderr line, written
before the runner starts: container/docker_exec.py); it is read again after a run that did not
end well (no answer, or a non-zero exit), so a kill is charged to the run in which it happened,
never to the next one that fails. A run that answered and exited 0 costs no read: a kill in it
(a child of the agent) is logged when the next run in the container begins.

Round trips to the engine for a turn in a container that exists: exec create, exec start (which
attaches), one exec inspect for the exit status (three; a bare `exec` costs two). The pool does
not ask the engine whether its container still runs: a container that died (or was removed) is
found when the exec cannot start, and the turn goes on in a new one (container/docker_pool.py).
Stopping is SIGTERM to the runner's group, SIGKILL after `kill_grace_s`, plus a sweep of its
strays, inside the container (an exec). Cancelling or closing the iteration stops the run the
same way.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from container.docker_exec import (
    OOM_MARK,
    STDERR,
    STDOUT,
    Chunk,
    ExecSession,
    kill_run,
    oom_kills,
    prelude_count,
)
from container.docker_pool import ContainerPool, DockerConfig, Placement
from container.git_mounts import GitMountError
from container.limits import TailBuffer, runner_env
from container.slots import TurnSlots
from container.supervision import RunFailure, RunnerOutput, timeout_failure
from container.workspace_access import hand_over, workspace_problem
from runners.protocol import (
    CRASHED,
    IDLE_TIMEOUT,
    OUT_OF_MEMORY,
    OUTPUT_CAP,
    SETUP,
    RunEvent,
    RunSpec,
    encode,
    error,
)

log = logging.getLogger(__name__)

DEFAULT_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    # The container is the sandbox (read-only mounts, no capabilities); Codex's own bubblewrap
    # sandbox cannot run in it (runners/codex.py).
    "TRIBUNAL_CODEX_SANDBOX": "external",
}
RUNNER_COMMAND = ("python3", "-P", "-m", "runners")
OOM_STATUS = 137  # SIGKILL; the memory cgroup's OOM killer is the only other sender
PRELUDE_MAX = 256  # bytes: a first stderr line longer than this is no wrapper's prelude


def exec_env(
    *layers: Mapping[str, str], secrets: Iterable[str] = ()
) -> tuple[dict[str, str], list[str]]:
    """The exec's environment from the layers (later wins), and the names refused: the
    LocalBackend's rule (container/limits.py) with nothing taken from the host."""
    return runner_env({}, *layers, allowed=(), secrets=frozenset(secrets))


def connect(docker_host: str | None = None, timeout: int = 120) -> Any:
    """A docker.DockerClient for `docker_host` (e.g. Settings.docker_host), else DOCKER_HOST."""
    import docker

    if docker_host:
        return docker.DockerClient(base_url=docker_host, timeout=timeout)
    return docker.from_env(timeout=timeout)


class DockerBackend:
    """`client` is a docker.DockerClient. `command` replaces `python3 -P -m runners` (tests run
    misbehaving runner programs this way); the agent type is always the last argument."""

    def __init__(
        self,
        client: Any,
        config: DockerConfig | None = None,
        *,
        env: Mapping[str, str] | None = None,
        command: Sequence[str] = RUNNER_COMMAND,
        turns_at_once: int | None = None,
        max_line_bytes: int = 4 * 1024 * 1024,
        stderr_tail_bytes: int = 4096,
        exit_wait_s: float = 5.0,
        kill_grace_s: float = 3.0,
        secrets: Iterable[str] = (),
    ) -> None:
        self.client = client
        # The chat platforms' declared secrets, from bot/: never in an exec's environment.
        self.secrets = frozenset(secrets)
        self.config = config or DockerConfig()
        self.pool = ContainerPool(client, self.config)
        self.env = {**DEFAULT_ENV, **(env or {})}
        self.command = list(command)
        self.slots = TurnSlots(turns_at_once)
        self.max_line_bytes = max_line_bytes
        self.stderr_tail_bytes = stderr_tail_bytes
        self.exit_wait_s = exit_wait_s
        self.kill_grace_s = kill_grace_s
        self._rooms: dict[tuple[str, str, str], asyncio.Lock] = {}
        self.oom_counts: dict[str, int | None] = {}  # container id → OOM kills seen so far
        self._started = False

    async def start(self) -> tuple[int, int]:
        """Reuse or remove what an earlier run of this instance left (docker_pool's rule);
        returns (reused, removed). Called by the first turn when not called before."""
        self._started = True
        return await asyncio.to_thread(self.pool.adopt)

    async def close(self) -> int:
        """Remove every container of this instance; returns how many."""
        return await asyncio.to_thread(self.pool.remove_all)

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        if not self._started:
            await self.start()
        room = self._rooms.setdefault(self.pool.key(_placement(spec)), asyncio.Lock())
        # Room first: a turn queued behind its room holds no runner slot. aclosing: when our
        # caller closes or cancels the iteration, the inner generators' cleanup (killing the
        # run) runs now.
        async with room, aclosing(self.slots.run(lambda: self._run_one(spec))) as events:
            async for event in events:
                yield event

    async def _run_one(self, spec: RunSpec) -> AsyncGenerator[RunEvent, None]:
        env, refused = exec_env(self.env, spec.env, secrets=self.secrets)
        if refused:
            log.warning("not passed to the container: %s", ", ".join(sorted(refused)))
        placement = _placement(spec)
        if placement.writable and spec.workspace:
            # A task's worktree (the spec names its git dir) is the engine's to hand over.
            problem = (
                await asyncio.to_thread(hand_over, spec.workspace, self.config.user)
                if spec.git_dir
                else workspace_problem(spec.workspace, self.config.user)
            )
            if problem is not None:
                yield error(SETUP, problem)
                return
        run_id = uuid.uuid4().hex
        argv = [*self.command, spec.agent]
        try:
            container_id = await asyncio.to_thread(self.pool.ensure, placement)
        except GitMountError as exc:
            yield error(SETUP, f"the worktree's git metadata cannot be mounted: {exc}")
            return
        except Exception as exc:
            yield error(CRASHED, f"could not start the runner in a container: {exc}")
            return
        try:
            async with aclosing(self._exec(spec, placement, container_id, run_id, argv, env)) as e:
                async for event in e:
                    yield event
        finally:
            await asyncio.to_thread(self.pool.release, placement)

    async def _exec(
        self,
        spec: RunSpec,
        placement: Placement,
        container_id: str,
        run_id: str,
        argv: list[str],
        env: dict[str, str],
    ) -> AsyncGenerator[RunEvent, None]:
        start = ExecSession.start
        try:
            try:
                session = await asyncio.to_thread(
                    start, self.client.api, container_id, run_id, argv, env, None
                )
            except Exception:
                # The pool trusts its containers to run (no inspect per turn): one that died
                # shows here. Then a new one, once; anything else fails the turn.
                if not await asyncio.to_thread(self.pool.discard, placement, container_id):
                    raise
                container_id = await asyncio.to_thread(self.pool.ensure, placement)
                session = await asyncio.to_thread(
                    start, self.client.api, container_id, run_id, argv, env, None
                )
        except GitMountError as exc:
            yield error(SETUP, f"the worktree's git metadata cannot be mounted: {exc}")
            return
        except Exception as exc:
            yield error(CRASHED, f"could not start the runner in a container: {exc}")
            return
        run = _Run(self, spec, session, run_id)
        try:
            async with aclosing(run.events()) as events:
                async for event in events:
                    yield event
        finally:
            await run.finish()


def _placement(spec: RunSpec) -> Placement:
    return Placement(
        spec.group, spec.request.role, spec.workspace, spec.git_dir, spec.git_common_dir
    )


class _Run:
    """One exec being supervised."""

    def __init__(self, backend: DockerBackend, spec: RunSpec, session: ExecSession, run_id: str):
        self.backend = backend
        self.spec = spec
        self.session = session
        self.run_id = run_id
        self.stderr = TailBuffer(backend.stderr_tail_bytes)
        # The runner's `error` is held until we know why it failed (out_of_memory).
        self.output = RunnerOutput(spec.max_output_bytes, backend.max_line_bytes, hold_error=True)
        self.killed = False
        self.done = False
        self.prelude = bytearray()  # the wrapper's first stderr line, until it is complete
        self.prelude_done = False

    async def events(self) -> AsyncGenerator[RunEvent, None]:
        try:
            async with aclosing(self._read()) as events:
                async for event in events:
                    yield event
        except RunFailure as failure:
            await self.kill()
            ending = self.output.ending(failure, self.stderr.note())
            if ending is not None:
                yield ending

    async def _read(self) -> AsyncGenerator[RunEvent, None]:
        spec, backend, output = self.spec, self.backend, self.output
        loop = asyncio.get_running_loop()
        queue = self.session.pump(encode(spec.request).encode("utf-8"), loop)
        start = last_event = loop.time()
        stderr_bytes = 0
        while True:
            idle_at, hard_at = last_event + spec.idle_timeout_s, start + spec.hard_timeout_s
            timeout = min(idle_at, hard_at) - loop.time()
            try:
                if timeout <= 0:
                    raise TimeoutError
                item: Chunk = await asyncio.wait_for(queue.get(), timeout)
            except TimeoutError:
                raise timeout_failure(spec, idle_at, hard_at) from None
            if item is None:
                break
            stream, data = item
            # One budget for stdout and stderr: a runner flooding either one is stopped.
            if output.total + stderr_bytes + len(data) > spec.max_output_bytes:
                raise RunFailure(
                    OUTPUT_CAP, f"the runner printed more than {spec.max_output_bytes} bytes"
                )
            if stream == STDERR:
                stderr_bytes += len(data)
                self.stderr.write(self._after_prelude(data))
                continue
            if stream != STDOUT:
                continue
            for event in output.feed(data):
                last_event = loop.time()
                yield event
        for event in output.finish():
            yield event
        status = await self._exit_status(min(hard_at, loop.time() + backend.exit_wait_s))
        self.done = True
        if output.answered and status == 0:
            return  # a kill in a run that went well is seen by the next run's prelude (logged)
        oom_grew = await self._oom_grew()  # read after the run: the kill is this run's
        if output.answered:
            if oom_grew:
                yield RunEvent(
                    kind="progress",
                    text=f"a process of this run was killed by the memory limit "
                    f"{backend.config.mem_limit}",
                )
            if status != 0:  # a runner exits 0 after its final (container/supervision.py)
                died = output.died_after_final(f"exited with status {status}")
                if died is not None:
                    yield died
            return
        # A process of the run died by the memory limit: the runner itself (status 137), or a
        # child such as the agent CLI, after which the runner reports its own error.
        if oom_grew or status == OOM_STATUS:
            said = f"; the runner said: {output.held.text}" if output.held is not None else ""
            output.held = None  # replaced by the reason below
            raise RunFailure(
                OUT_OF_MEMORY,
                f"a process of the run was killed by the memory limit "
                f"{backend.config.mem_limit} (runner status {status}){said}",
            )
        if output.held is not None:
            yield output.held
            return
        raise RunFailure(CRASHED, f"the runner exited with status {status} without an answer")

    def _after_prelude(self, data: bytes) -> bytes:
        """The stderr data after the wrapper's first line, the OOM-kill count as the run began
        (container/docker_exec.py): that count is what this run's kills are measured from."""
        if self.prelude_done:
            return data
        self.prelude += data
        line, newline, rest = bytes(self.prelude).partition(b"\n")
        if not newline and len(self.prelude) < PRELUDE_MAX:
            return b""
        self.prelude_done = True
        self.prelude.clear()
        if not line.startswith(OOM_MARK):
            return line + newline + rest  # no prelude (the wrapper failed): all the runner's
        now = prelude_count(line)
        counts, container_id = self.backend.oom_counts, self.session.container_id
        before = counts.get(container_id)
        if now is not None and before is not None and now > before:
            log.warning(
                "a process of an earlier run in container %s was killed by the memory limit %s",
                container_id[:12],
                self.backend.config.mem_limit,
            )
        counts[container_id] = now
        return rest

    async def _oom_grew(self) -> bool:
        """Whether the container's OOM-kill counter went up since it was last read."""
        api, container_id = self.backend.client.api, self.session.container_id
        now = await asyncio.to_thread(oom_kills, api, container_id)
        before = self.backend.oom_counts.get(container_id)
        if now is not None:
            self.backend.oom_counts[container_id] = now
        return now is not None and before is not None and now > before

    async def _exit_status(self, until: float) -> int | None:
        """The exec's exit status once its output ended; kills it when it lingers."""
        loop = asyncio.get_running_loop()
        while True:
            running, status = await asyncio.to_thread(self.session.status)
            if not running:
                return status
            if loop.time() >= until:
                await self.kill()
                raise RunFailure(IDLE_TIMEOUT, "the runner closed its output but did not exit")
            await asyncio.sleep(0.05)

    async def kill(self) -> None:
        if self.killed:
            return
        self.killed = True
        started = time.monotonic()
        await asyncio.to_thread(
            kill_run,
            self.backend.client.api,
            self.session.container_id,
            self.run_id,
            self.backend.kill_grace_s,
        )
        log.info("killed run %s in %.2fs", self.run_id, time.monotonic() - started)

    async def finish(self) -> None:
        """Whatever happened (done, failed, cancelled, closed early): nothing keeps running."""
        try:
            if not self.done:
                await self.kill()
        finally:
            self.session.close()
