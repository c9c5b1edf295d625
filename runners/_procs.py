"""Keep track of every process an agent starts, so none outlives its turn.

The host kills a runner's whole process group, but that is not enough: Claude Code starts each
Bash command in a new session (its own process group), so `server &` or `(cmd &)` escapes the
group and, once its parent exits, is re-parented to init and lives on. Checked with Claude Code
2.1.332: a `sleep 300 &` from the Bash tool survived the CLI's exit with ppid 1.

The runner therefore makes itself a *child subreaper* (Linux `PR_SET_CHILD_SUBREAPER`): orphans
among its descendants are re-parented to the runner instead of init, so it can still find them
through /proc and kill them when the turn ends or when the host sends SIGTERM. What remains out of
reach: descendants that are still alive after the runner is SIGKILLed (the host's grace period
is there so this cleanup can run). Inside a container the container itself bounds them.
Linux only; elsewhere these functions do nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from types import FrameType

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def become_undumpable() -> bool:
    """Make this process non-dumpable (Linux `PR_SET_DUMPABLE` 0): its /proc/<pid>/fd, mem and
    environ then belong to root, so a process of the same user without CAP_SYS_PTRACE (every
    agent: a non-root container user with all capabilities dropped) can no longer open the
    runner's protocol pipe through /proc/<pid>/fd/<n> and write events in its name. Children
    get the default back when they exec, so the agent's own tools are unaffected."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def descendants(root: int | None = None) -> list[int]:
    """Every living descendant of `root` (default: this process), found through /proc."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        # The command name may contain spaces and parentheses: fields start after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) < 2 or fields[0] == b"Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_descendants(grace_s: float = 2.0) -> int:
    """SIGKILL every descendant and wait until all are dead (zombies count as dead), repeating
    while new ones appear (a fork racing the kill); reap those that became our children.

    Waiting matters: SIGKILL is delivered asynchronously, and a multi-threaded agent CLI takes a
    moment to die; a runner that exited at once would leave it running past its turn. Bounded by
    `grace_s`. Returns how many processes were killed."""
    killed: set[int] = set()
    deadline = time.monotonic() + grace_s
    while True:
        pids = descendants()
        if not pids or time.monotonic() > deadline:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        _reap()
        time.sleep(0.01)
    _reap()
    return len(killed)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def install_sigterm_cleanup() -> None:
    """On SIGTERM (the host's first, polite signal) kill the agent's processes, then exit 143."""

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        kill_descendants()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_sigterm)
