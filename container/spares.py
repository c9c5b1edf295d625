"""Spare runners for the LocalBackend: a runner's start paid before its turn, not in it (issue 28).

A local turn used to start `python -P -m runners <agent>` and wait for the interpreter and its
imports (~0.15–0.5 s, more than a third of a bare Claude Code turn) before the agent CLI could
start. A spare is `python -P -m runners --warm` (runners/warm.py) started ahead in the
background: past its imports, blocked reading its stdin. A turn takes it and hands it a
`TurnSetup` line (agent, folder, environment), then the request.

The environment: a spare starts with only what every turn shares, the allow-listed host
variables and the backend's own `env` (container/limits.runner_env; never a turn's HOME or its
`spec.env`: no model key, no run token), in `/`. Each turn's whole environment is computed
when the turn starts, exactly as for a runner started for it, and sent with the setup; the
spare replaces its own with it. What the interpreter read when it started cannot be replaced
(`PYTHON*` variables, the locale: `startup_part`), so a spare is keyed by its environment:
it is given a turn only when the shared environment is still the one it started with and the
turn's values of the startup names are the spare's; otherwise it is dismissed and the turn
starts a runner of its own, as before.

The cap: a spare is a process, though not a running turn. Spares are only started while the
runners alive (turns holding a runner slot, container/slots.py) plus the spares stay within
`turns_at_once`, and at most `most` of them (the bot keeps one: bot/backend.py); a turn that
gets a slot takes a spare or dismisses it before it starts a runner of its own, so the
processes never outnumber the slots: 20 tasks at once start at most `turns_at_once` runners.

A spare that died (noticed when taken: it exited, or its stdout ended), hung (it does not
acknowledge the setup within `ack_timeout_s`) or was killed is SIGKILLed with its process
group and session and the turn starts a runner of its own; a new spare replaces it. The
replacement is started as soon as a turn has taken (or dismissed) one, while that turn runs,
so that a turn right after it finds it ready; on a busy machine its start competes with that
turn's agent for the CPUs (bench_claude_turn measures it so). A spare
that took its turn is supervised as any runner (container/local.py): stop, cancel, the
timeouts and the group kill are the same, and it dies with the bot (container/parent_death.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from container.parent_death import die_with_parent
from container.sessions import kill_session
from runners.protocol import RunRequest, TurnSetup, encode

log = logging.getLogger(__name__)

# Read by the interpreter when it starts (module search path, hash seed, UTF-8 mode, the
# locale): a spare started with other values cannot take them on later.
STARTUP_PREFIX = "PYTHON"
STARTUP_LOCALE = ("LANG", "LC_ALL", "LC_CTYPE")
ACK = b"\n"  # what a spare answers its setup with (runners/warm.py)
SPARE_CWD = "/"  # not a workspace: the spare learns its folder with its turn


def startup_part(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` the interpreter reads at its start."""
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIX) or k in STARTUP_LOCALE}


@dataclass
class Spare:
    proc: asyncio.subprocess.Process
    env: dict[str, str]  # what it was started with: the shared part only
    loop: asyncio.AbstractEventLoop


class SparePool:
    """Up to `most` spare runners of `argv`, for the event loop that started them."""

    def __init__(self, argv: Sequence[str], *, most: int = 1, ack_timeout_s: float = 10.0):
        if most < 0:
            raise ValueError(f"spare runners cannot be fewer than 0 (got {most})")
        self.argv = list(argv)
        self.most = most
        self.ack_timeout_s = ack_timeout_s
        self._idle: list[Spare] = []
        self._starting: set[asyncio.Task[None]] = set()
        self._reaping: set[asyncio.Task[None]] = set()
        self.closed = False  # no spare is started any more

    def pids(self) -> list[int]:
        """The process ids of the spares waiting for a turn."""
        return [spare.proc.pid for spare in self._idle]

    @property
    def count(self) -> int:
        """Spares alive or being started."""
        return len(self._idle) + len(self._starting)

    def refill(self, shared_env: Mapping[str, str], room: int) -> None:
        """Start spares in the background, up to `most` and to `room` (the slots no runner
        holds). Outside a running event loop (a turn's generator finalized late) or once
        closed, nothing is started."""
        if self.most == 0 or self.closed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._dismiss_where(lambda s: s.loop is not loop or s.env != shared_env)
        while self.count < min(self.most, room):
            task = loop.create_task(self._start(dict(shared_env), loop))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _start(self, env: dict[str, str], loop: asyncio.AbstractEventLoop) -> None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=SPARE_CWD,
                env=env,
                start_new_session=True,  # its own group and session, as any runner's
                preexec_fn=die_with_parent(),
            )
        except OSError as exc:
            log.warning("could not start a spare runner %r: %s", self.argv, exc)
            return
        self._idle.append(Spare(proc, env, loop))

    async def take(
        self, shared_env: Mapping[str, str], turn_env: Mapping[str, str]
    ) -> Spare | None:
        """A living spare that may run a turn with `turn_env`, or None. A spare being started
        is waited for (a fork and exec); spares that may not run it (dead, of another event
        loop, of another environment) are dismissed and waited for until they are gone: the
        turn then starts a runner of its own, which the cap counts instead."""
        loop = asyncio.get_running_loop()
        starting = {task for task in self._starting if task.get_loop() is loop}
        if starting:
            await asyncio.wait(starting)
        wanted = startup_part(turn_env)

        def unfit(spare: Spare) -> bool:
            return (
                spare.loop is not loop
                or spare.proc.returncode is not None
                or spare.env != shared_env
                or startup_part(spare.env) != wanted
            )

        dismissed = self._dismiss_where(unfit)
        if dismissed:
            await asyncio.wait(dismissed)
        return self._idle.pop(0) if self._idle else None

    async def hand_over(
        self, spare: Spare, setup: TurnSetup, request: RunRequest
    ) -> asyncio.subprocess.Process | None:
        """Give `spare` its turn: the setup and request lines, then stdin closed. Returns the
        process once it acknowledged the setup; None when it did not within `ack_timeout_s`
        (died, hung, or its pipes are gone): it is killed, the caller starts a runner of its
        own."""
        proc = spare.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            async with asyncio.timeout(self.ack_timeout_s):
                proc.stdin.write(encode(setup).encode() + encode(request).encode())
                await proc.stdin.drain()
                proc.stdin.close()
                answer = await proc.stdout.readline()
        except asyncio.CancelledError:  # the turn was stopped during the hand-over
            self._dismiss(spare)
            raise
        except (TimeoutError, ConnectionError, ValueError) as exc:
            answer, why = b"", f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        else:
            why = "its output ended" if not answer else f"it answered {answer[:80]!r}"
        if answer == ACK:
            return proc
        log.warning("a spare runner did not take its turn (%s); starting a runner for it", why)
        await _kill(spare)
        return None

    async def close(self) -> None:
        """Dismiss every spare and wait for them to end; start none any more."""
        self.closed = True
        await self.dismiss_all()

    async def dismiss_all(self) -> None:
        """Dismiss every spare (those being started too) and wait for them to end (those of
        this event loop: one of another is only signalled)."""
        loop = asyncio.get_running_loop()
        starting = [task for task in self._starting if task.get_loop() is loop]
        for task in starting:
            task.cancel()  # asyncio kills a process it was starting when cancelled
        await asyncio.gather(*starting, return_exceptions=True)
        await asyncio.gather(*self._dismiss_where(lambda s: True), return_exceptions=True)
        reaping = [task for task in self._reaping if task.get_loop() is loop]
        await asyncio.gather(*reaping, return_exceptions=True)

    def _dismiss_where(self, condition: Callable[[Spare], bool]) -> set[asyncio.Task[None]]:
        """SIGKILL the spares `condition` is true of; returns the tasks that reap them (those
        of this event loop: one of another loop, closed or not, is only signalled)."""
        keep: list[Spare] = []
        reaping: set[asyncio.Task[None]] = set()
        for spare in self._idle:
            if not condition(spare):
                keep.append(spare)
                continue
            task = self._dismiss(spare)
            if task is not None:
                reaping.add(task)
        self._idle = keep
        return reaping

    def _dismiss(self, spare: Spare) -> asyncio.Task[None] | None:
        """SIGKILL `spare`; the task that reaps it when it is of this event loop."""
        _signal(spare)
        if spare.loop is not asyncio.get_running_loop():
            return None
        task = spare.loop.create_task(_reap(spare))
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)
        return task


def _signal(spare: Spare) -> None:
    """SIGKILL the spare's group and session (it may have started nothing yet: cheap)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(spare.proc.pid, signal.SIGKILL)
    kill_session(spare.proc.pid)


async def _reap(spare: Spare) -> None:
    await spare.proc.wait()
    _close_transport(spare.proc)


async def _kill(spare: Spare) -> None:
    _signal(spare)
    await _reap(spare)


def _close_transport(proc: asyncio.subprocess.Process) -> None:
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()
