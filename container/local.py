"""LocalBackend: run a turn as a plain local process (development; no isolation).

`python -P -m runners <agent>` is started in its own session (so it leads its own process group),
in the workspace, with a minimal environment: the allow-listed host variables (PATH, HOME, LANG,
…; not PYTHONPATH), the backend's `env`, a HOME of the run's own (group, role) under `homes`
when set, then `spec.env` (model credentials come per run). Platform tokens and
the engine's address (`SLACK_*`, `DISCORD_*`, `DOCKER_*`, `*_BOT_TOKEN`, … see
`container.limits.is_forbidden`) never get through, from any of the three. `-P` keeps the
workspace (the cwd) off `sys.path`, so an untrusted repository cannot shadow the runner's modules.

At most `turns_at_once` runners live at once (container/slots.py; default from the CPUs and
memory); a turn past that waits for a slot, and says so with a `queued` event.

A turn runs on a spare runner when one fits (container/spares.py: `python -P -m runners --warm`,
started ahead with only the environment every turn shares, in `/`): it is handed a `TurnSetup`
line with the turn's agent, folder and whole environment (computed here per turn, as for a
runner started for it), then the request. Spares count against `turns_at_once` with the
running turns. The bot asks for one (bot/backend.py); the default is none (a backend made
in passing, as tests do, leaves no idle process behind), and a `command` of a test's own never
has any.
Otherwise the runner is started for the turn, as described next.

The request line is written to stdin, stdin is closed, and events are yielded as their lines
arrive. Rules, the same for every run (the first two shared with the DockerBackend:
container/supervision.py):

- Every run ends with exactly one terminal event: the runner's `final` or `error`, or an `error`
  from the backend. Events after the runner's terminal event are still passed on, except a
  second terminal event: the same one again is dropped (logged), a different one is a
  `protocol` error after the answer, which fails the turn (someone else wrote into the pipe; the
  runner itself is not dumpable, runners/_io.py, and nor is the bot that runs turns on this
  backend, bot/hardening.py). A failure after the answer (garbage, timeout) is logged only,
  because the turn's answer is already in; but a runner that ends by itself with a non-zero
  status or by a signal after a `final` fails the turn (`crashed` after it): it did not
  answer as a runner does (container/supervision.py).
- Blank stdout lines are ignored. Any other line that is not a RunEvent is a broken runner:
  error `protocol` and kill (runners keep stdout for the protocol alone; see runners/_io.py).
- No event for `spec.idle_timeout_s` → `idle_timeout`; past `spec.hard_timeout_s` →
  `hard_timeout`; more than `spec.max_output_bytes` on stdout, or one line longer than
  `max_line_bytes` → `output_cap`. The runner exiting without a terminal event → `crashed`,
  with its exit status (or signal) and the tail of its stderr.
- Stopping: SIGTERM to the process group, SIGKILL after `kill_grace_s`, then the leader is
  reaped. When the leader exits by itself, whatever is left in its group is SIGKILLed too.
  Either way, so is every process left in the runner's session: the command runner's checks
  run in process groups of their own in it, and must not outlive a runner that was SIGKILLed
  (container/sessions.py). Cancelling or closing the iteration stops the process the same way.

Processes that leave the group (`setsid`, as Claude Code's Bash tool does) are the runner's to
clean up (it is a child subreaper, runners/_procs.py) — locally nothing else bounds them.

The bot killed (SIGKILL, a crash): each runner gets SIGTERM from the kernel, its parent-death
signal (container/parent_death.py), and ends its agent's processes as on the backend's SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import sys
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from typing import Any

from container.limits import TailBuffer, runner_env
from container.parent_death import die_with_parent
from container.sessions import kill_session
from container.slots import TurnSlots
from container.spares import SparePool
from container.supervision import RunFailure, RunnerOutput, timeout_failure
from runners.protocol import (
    CRASHED,
    IDLE_TIMEOUT,
    WARM,
    RunEvent,
    RunSpec,
    TurnSetup,
    encode,
    error,
)

log = logging.getLogger(__name__)

CHUNK_BYTES = 64 * 1024


class LocalBackend:
    """Implements the rooms `Runner` port with local processes.

    `command` replaces `python -P -m <runner_module>` (tests run misbehaving runner programs
    through the real supervision this way); the agent type is always appended as the last
    argument. `clock` (seconds; default the event loop's) is what the idle and hard timeouts
    are measured on: a test can start it when its fake model sees the request, so a timeout
    decides the same however slowly a loaded machine starts the agent CLI."""

    def __init__(
        self,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        runner_module: str = "runners",
        *,
        command: Sequence[str] | None = None,
        kill_grace_s: float = 3.0,
        max_line_bytes: int = 4 * 1024 * 1024,
        exit_drain_s: float = 2.0,
        stderr_tail_bytes: int = 4096,
        homes: str | None = None,
        clock: Callable[[], float] | None = None,
        secrets: Iterable[str] = (),
        turns_at_once: int | None = None,
        spares: int = 0,
        spare_ack_s: float = 10.0,
    ) -> None:
        self.python = python
        self.env = dict(env or {})
        self.runner_module = runner_module
        self.command = list(command) if command is not None else None
        self.kill_grace_s = kill_grace_s
        self.max_line_bytes = max_line_bytes
        self.exit_drain_s = exit_drain_s
        self.stderr_tail_bytes = stderr_tail_bytes
        self.homes = homes
        # Variables never handed to a runner beyond container.limits' own: the chat platforms'
        # declared secrets, which bot/ passes in (this package imports nothing of the bot's).
        self.secrets = frozenset(secrets)
        self.clock = clock
        self.slots = TurnSlots(turns_at_once)
        # Spare runners started ahead (container/spares.py); never while a `command` of a
        # test's own is set, which knows nothing of `--warm`.
        warm = [self.python, "-P", "-m", self.runner_module, WARM]
        self.spares = SparePool(warm, most=spares, ack_timeout_s=spare_ack_s)

    def argv(self, spec: RunSpec) -> list[str]:
        base = self.command or [self.python, "-P", "-m", self.runner_module]
        return [*base, spec.agent]

    def home_for(self, spec: RunSpec) -> dict[str, str]:
        """HOME of the spec's (group, role) under `homes` (created, mode 0700), when set."""
        if self.homes is None:
            return {}
        home = os.path.join(self.homes, _slug(spec.group), _slug(spec.request.role))
        os.makedirs(home, mode=0o700, exist_ok=True)
        return {"HOME": home}

    def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        return self.slots.run(lambda: self._run_one(spec), freed=self._refill_spares)

    async def close(self) -> None:
        """Dismiss the spare runners (the turns are their callers' to stop)."""
        await self.spares.close()

    def shared_env(self) -> dict[str, str]:
        """What every runner's environment has: the spares start with this alone."""
        return runner_env(os.environ, self.env, secrets=self.secrets)[0]

    def _refill_spares(self, shared_env: dict[str, str] | None = None) -> None:
        """Start spares up to the free slots; `shared_env` when the caller already has it."""
        if self.command is None:
            shared = shared_env if shared_env is not None else self.shared_env()
            self.spares.refill(shared, self.slots.size - self.slots.running)

    async def _run_one(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        env, refused = runner_env(
            os.environ, self.env, self.home_for(spec), spec.env, secrets=self.secrets
        )
        if refused:
            log.warning("not passed to the runner (platform tokens): %s", ", ".join(refused))
        request = spec.request
        if spec.workspace is not None:
            # The runner works where the backend put it, not at the container path /workspace.
            request = request.model_copy(update={"cwd": spec.workspace})
        proc = None
        shared = self.shared_env()  # once a turn: what a spare must have started with
        if self.command is not None:
            spare = None
            await self.spares.dismiss_all()  # of before the command was set: one cap for all
        else:
            spare = await self.spares.take(shared, env)
        if spare is not None:
            setup = TurnSetup(agent=spec.agent, cwd=spec.workspace or os.getcwd(), env=env)
            proc = await self.spares.hand_over(spare, setup, request)
        self._refill_spares(shared)  # while this turn runs: the next one finds its spare started
        request_line: bytes | None = None
        if proc is None:
            try:
                proc = await asyncio.create_subprocess_exec(
                    *self.argv(spec),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    cwd=spec.workspace,
                    env=env,
                    start_new_session=True,
                    preexec_fn=die_with_parent(),  # a killed bot takes its runners along
                )
            except OSError as exc:
                yield error(CRASHED, f"could not start the runner {self.argv(spec)!r}: {exc}")
                return
            request_line = encode(request).encode("utf-8")
        run = _Supervised(self, spec, proc)
        events = run.events(request_line)
        try:
            async for event in events:
                yield event
        finally:
            # Closed early, cancelled or done: the process group goes with the iteration.
            await run.stop()
            await events.aclose()


class _Supervised:
    """One running runner process and what has been seen of it."""

    def __init__(self, backend: LocalBackend, spec: RunSpec, proc: asyncio.subprocess.Process):
        self.backend = backend
        self.spec = spec
        self.proc = proc
        self.pgid = proc.pid  # start_new_session: the leader's pid is the group id
        self.stderr = TailBuffer(backend.stderr_tail_bytes)
        self.output = RunnerOutput(spec.max_output_bytes, backend.max_line_bytes)
        self.stop_note = ""
        self.stopped = False  # stopped by the backend (not ended by itself)
        self.clock = backend.clock or asyncio.get_running_loop().time
        self._tasks: list[asyncio.Task[None]] = []

    async def events(self, request_line: bytes | None) -> AsyncGenerator[RunEvent, None]:
        """The run's events; `request_line` is fed to its stdin (None: a spare that already
        has its request, container/spares.py)."""
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        self._tasks = [self._stderr_task]
        if request_line is not None:
            self._tasks.append(asyncio.create_task(self._feed(request_line)))
        try:
            async for event in self._read():
                yield event
        except RunFailure as failure:
            await self.stop()
            ending = self.output.ending(failure, f"{self.stop_note}{self.stderr.note()}")
            if ending is not None:
                yield ending

    async def _read(self) -> AsyncIterator[RunEvent]:
        clock, spec, proc, output = self.clock, self.spec, self.proc, self.output
        assert proc.stdout is not None
        start = last_event = clock()
        exited_at: float | None = None
        exit_task = asyncio.create_task(proc.wait())
        read_task: asyncio.Task[bytes] | None = None
        try:
            while True:
                now = clock()
                idle_at, hard_at = last_event + spec.idle_timeout_s, start + spec.hard_timeout_s
                deadline = min(idle_at, hard_at)
                if exited_at is not None:
                    # The leader is gone; only a straggler holding the pipe can keep it open.
                    deadline = min(deadline, exited_at + self.backend.exit_drain_s)
                if now >= deadline:
                    if exited_at is not None and deadline < min(idle_at, hard_at):
                        log.warning(
                            "stdout still open %.1fs after the runner exited", now - exited_at
                        )
                        break
                    raise timeout_failure(spec, idle_at, hard_at)
                if read_task is None:
                    read_task = asyncio.create_task(proc.stdout.read(CHUNK_BYTES))
                waiting: set[asyncio.Task[Any]] = {read_task}
                if exited_at is None:
                    waiting.add(exit_task)
                await asyncio.wait(
                    waiting, timeout=deadline - now, return_when=asyncio.FIRST_COMPLETED
                )
                if exited_at is None and exit_task.done():
                    exited_at = clock()
                    _killpg(self.pgid, signal.SIGKILL)  # leftovers of the group, not the leader
                    kill_session(self.pgid)  # and of the session: its checks (container/sessions)
                if not read_task.done():
                    continue
                chunk = read_task.result()
                read_task = None
                if not chunk:
                    break
                for event in output.feed(chunk):
                    yield event
                    # Counted from when the consumer takes the next one: time spent handling
                    # an event (posting it to a chat) is not the runner's silence.
                    last_event = clock()
            for event in output.finish():
                yield event
            await self._wait_exit(exit_task, min(start + spec.hard_timeout_s, clock() + 5))
            if not self.stopped and proc.returncode != 0:
                died = output.died_after_final(_exit_text(proc.returncode))
                if died is not None:
                    yield died
        finally:
            for task in (read_task, exit_task):
                if task is not None and not task.done():
                    task.cancel()
        if not output.terminal_seen:
            raise RunFailure(CRASHED, f"the runner {_exit_text(proc.returncode)} without an answer")

    async def _wait_exit(self, exit_task: asyncio.Task[int], until: float) -> None:
        """stdout is closed; the runner should exit now. If it does not, it is stopped."""
        timeout = max(0.0, until - self.clock())
        try:
            await asyncio.wait_for(asyncio.shield(exit_task), timeout)
        except TimeoutError:
            await self.stop()
            if not self.output.terminal_seen:
                raise RunFailure(
                    IDLE_TIMEOUT, "the runner closed its output but did not exit"
                ) from None
        # stderr may lag behind the exit a little; the crash report wants its tail.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)

    async def _feed(self, line: bytes) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        # A runner that dies (or never reads) before taking its request is reported by its exit.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(line)
            await stdin.drain()
            stdin.close()

    async def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        while chunk := await stream.read(CHUNK_BYTES):
            self.stderr.write(chunk)

    async def stop(self) -> None:
        """Stop the group (SIGTERM, then SIGKILL after the grace period) and reap the leader.
        Safe to call more than once and on a runner that already exited."""
        proc = self.proc
        try:
            if proc.returncode is None:
                self.stopped = True
                _killpg(self.pgid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), self.backend.kill_grace_s)
                    self.stop_note = " (stopped with SIGTERM)"
                except TimeoutError:
                    self.stop_note = (
                        f" (ignored SIGTERM; SIGKILLed after {self.backend.kill_grace_s:g}s)"
                    )
            _killpg(self.pgid, signal.SIGKILL)
            kill_session(self.pgid)
            await proc.wait()
            kill_session(self.pgid)  # what was forked while the leader died
        except BaseException:
            # Interrupted (a second cancellation): never leave the group running.
            _killpg(self.pgid, signal.SIGKILL)
            kill_session(self.pgid)
            raise
        finally:
            for task in self._tasks:
                if not task.done():
                    task.cancel()
            # A pipe whose reading was paused (output cap) or abandoned never sees EOF, and its
            # transport would stay open until garbage collection; close it with the run.
            transport = getattr(proc, "_transport", None)
            if transport is not None and proc.returncode is not None:
                transport.close()


def _slug(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    return "_" if slug in ("", ".", "..") else slug


def _killpg(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _exit_text(returncode: int | None) -> str:
    if returncode is None:
        return "stopped"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with status {returncode}"
