"""`python -m runners command`: the engine's own checks (resolve's tests), run as given, no model.

Reads one `RunRequest` whose `checks` say what to run, runs each in order and ends with one
`final` whose `structured` is a `CheckReport`: per check its exit status, whether it timed out
or was killed by a signal, and a bounded tail of its output. Nobody reports a result here; the
runner sees it. The engine derives PASS/FAIL/ERROR from that (rooms/resolve/checks.py).

A check is untrusted: it comes from an agent's test design. How each is run, and why:

- `/bin/sh -c <command>` with cwd = request.cwd (the workspace: read-only in a container) and
  stdin from /dev/null, in a process group of its own but in the runner's session: the host
  ends the runner's whole session, so a check that SIGKILLs the runner (whose own cleanup then
  never runs) is ended with what it started (container/sessions.py).
- stdout and stderr go into one pipe the runner reads, never the runner's own: a check must not
  be able to print protocol lines. The runner is not dumpable (runners/_io.protect_stdout), so a
  check of the same user cannot reach the protocol pipe through /proc/<runner>/fd either.
- Its environment is built from nothing: PATH, HOME, TMPDIR and LANG, with HOME and TMPDIR a
  fresh folder of its own (removed after it). Whatever reached the runner (a key, the proxy's
  socket) does not reach the check.
- At its timeout its whole group is SIGKILLed; when the shell exits, what it left in its group
  is SIGKILLed too, and so is anything that left the group (`setsid`): the runner is a child
  subreaper (runners/_procs.py), so such strays are still its descendants. A stray that holds
  the pipe open ends the check's reading after STRAY_GRACE_S.
- Only the last TAIL_BYTES of its output are kept, read in chunks: a check printing gigabytes
  costs time (bounded by its timeout), not memory.
- A progress event before each check and every HEARTBEAT_S while one runs, so the host's idle
  timeout measures the runner, not the length of the test suite.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from runners import _procs
from runners._io import EventWriter, run_main
from runners.protocol import (
    SETUP,
    Check,
    CheckReport,
    CheckResult,
    RunEvent,
    RunRequest,
    error,
)

TAIL_BYTES = 4096
CHUNK_BYTES = 64 * 1024
HEARTBEAT_S = 10.0
STRAY_GRACE_S = 1.0  # reading stops this long after the shell exited, if a stray holds the pipe
EXIT_POLL_S = 0.1  # without a pidfd, how often a silent check is looked at
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
SHELL = "/bin/sh"


class Tail:
    """The last `limit` bytes of a stream, and how many bytes it had in all."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.total = 0
        self._data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._data += chunk[-self.limit :]
        if len(self._data) > self.limit:
            del self._data[: len(self._data) - self.limit]

    def text(self) -> str:
        return self._data.decode("utf-8", "replace")


def check_env(scratch: str) -> dict[str, str]:
    """A check's whole environment: nothing of the runner's but PATH."""
    return {
        "PATH": os.environ.get("PATH") or DEFAULT_PATH,
        "HOME": scratch,
        "TMPDIR": scratch,
        "LANG": "C.UTF-8",
    }


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _pidfd(pid: int) -> int | None:
    """A pidfd (readable once `pid` exits, without reaping it), or None where there is none."""
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None


class _Beat:
    def __init__(self, out: EventWriter, check: Check, started: float) -> None:
        self.out, self.check, self.started = out, check, started
        self.next = started + HEARTBEAT_S

    def due(self, now: float) -> None:
        if now >= self.next:
            self.next = now + HEARTBEAT_S
            elapsed = now - self.started
            self.out.emit(RunEvent(kind="progress", text=f"{self.check.id}: {elapsed:.0f} s"))


def run_check(check: Check, cwd: str, out: EventWriter) -> CheckResult:
    scratch = tempfile.mkdtemp(prefix="tribunal-check-")
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            [SHELL, "-c", check.command],
            cwd=cwd,
            env=check_env(scratch),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            process_group=0,  # its own group (killed at its timeout), the runner's session
            close_fds=True,
        )
    except OSError as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        return CheckResult(id=check.id, started=False, output_tail=f"could not start: {exc}")
    tail = Tail()
    timed_out = False
    try:
        timed_out = _follow(proc, check, tail, _Beat(out, check, started))
    finally:
        _killpg(proc.pid)  # what the shell left in its group
        returncode = proc.wait()
        # Strays that left the group (setsid): reaped only now, so `proc`'s own status is safe.
        _procs.kill_descendants()
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return CheckResult(
        id=check.id,
        exit_status=returncode if returncode >= 0 else None,
        timed_out=timed_out,
        signalled=returncode < 0,
        signal=-returncode if returncode < 0 else None,
        output_tail=tail.text(),
        output_bytes=tail.total,
        duration_s=round(time.monotonic() - started, 3),
    )


def _follow(proc: subprocess.Popen[bytes], check: Check, tail: Tail, beat: _Beat) -> bool:
    """Read the check's output until it ends; True when it ran out of time (then its group was
    killed). Returns once the pipe is closed and the shell has exited, or STRAY_GRACE_S after
    the shell exited while something else keeps the pipe open."""
    assert proc.stdout is not None
    pipe = proc.stdout.fileno()
    os.set_blocking(pipe, False)
    deadline = beat.started + check.timeout_s
    pidfd = _pidfd(proc.pid)
    exited_at: float | None = None
    shell_done = False  # the pidfd said so
    pipe_open = True
    with selectors.DefaultSelector() as selector:
        selector.register(pipe, selectors.EVENT_READ)
        if pidfd is not None:
            selector.register(pidfd, selectors.EVENT_READ)
        try:
            while True:
                now = time.monotonic()
                if exited_at is None and (shell_done or (pidfd is None and _exited(proc))):
                    exited_at = now
                    _killpg(proc.pid)
                if exited_at is None and now >= deadline:
                    _killpg(proc.pid)
                    return True
                if exited_at is not None and (not pipe_open or now >= exited_at + STRAY_GRACE_S):
                    return False
                beat.due(now)
                until = min(deadline, beat.next)
                if exited_at is not None:
                    until = min(until, exited_at + STRAY_GRACE_S)
                elif pidfd is None:
                    until = min(until, now + EXIT_POLL_S)
                for key, _ in selector.select(max(0.0, until - now)):
                    if key.fd == pidfd:
                        shell_done = True
                        selector.unregister(pidfd)
                    elif not _read(pipe, tail):
                        pipe_open = False
                        selector.unregister(pipe)
        finally:
            if pidfd is not None:
                os.close(pidfd)


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the shell has exited, without reaping it (its group must stay killable)."""
    try:
        waited = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return waited is not None


def _read(pipe: int, tail: Tail) -> bool:
    """One chunk into the tail; False at end of stream."""
    try:
        chunk = os.read(pipe, CHUNK_BYTES)
    except BlockingIOError:
        return True
    if not chunk:
        return False
    tail.add(chunk)
    return True


def describe(result: CheckResult) -> str:
    if not result.started:
        return f"{result.id}: could not start"
    if result.timed_out:
        return f"{result.id}: timed out after {result.duration_s:.0f} s"
    if result.signalled:
        return f"{result.id}: killed by signal {result.signal}"
    return f"{result.id}: exit {result.exit_status} in {result.duration_s:.1f} s"


async def run_turn(request: RunRequest, out: EventWriter) -> None:
    if not request.checks:
        out.emit(error(SETUP, "the command runner was given no checks"))
        return
    if not os.path.isdir(request.cwd):
        where = f"the checks' folder {request.cwd} does not exist"
        out.emit(error(SETUP, f"{where}: is a workspace set for this group?"))
        return
    results: list[CheckResult] = []
    total = len(request.checks)
    for n, check in enumerate(request.checks, 1):
        out.emit(RunEvent(kind="progress", text=f"running {check.id} ({n} of {total})"))
        result = run_check(check, request.cwd, out)
        results.append(result)
        out.emit(RunEvent(kind="progress", text=describe(result)))
    report = CheckReport(checks=results)
    summary = "; ".join(describe(r) for r in results)
    out.emit(RunEvent(kind="final", text=summary, structured=report.model_dump()))


def main() -> int:
    return run_main(run_turn)


if __name__ == "__main__":
    sys.exit(main())
