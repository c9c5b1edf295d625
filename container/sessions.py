"""Ending a local runner's whole session, not only its process group (issue 24 #16).

The LocalBackend starts each runner in a session of its own. The command runner starts each
check in a process group of its own inside that session (its timeout kills that group), so a
check's processes are not in the runner's group: a check that SIGKILLs the runner (the runner's
own cleanup then never runs, runners/_procs.py) left them running, re-parented to init. Every
process keeps its session until it calls `setsid`, whatever it forks, so the backend ends the
session: every process whose session id is the runner's, found through /proc (Linux; elsewhere
nothing is found and the process group kill is all there is). A process that called `setsid`
itself is outside the reach of this and of the group kill: on the local backend (no isolation)
only the living runner's subreaper cleanup finds those; in a container the container ends them.

The runner's pid names its session for as long as any member lives (the kernel does not hand a
pid out again while a session or a group still has it as its id), so the ids found are the run's.
"""

from __future__ import annotations

import contextlib
import os
import signal

MAX_PASSES = 100  # passes over /proc, for members forked while the earlier ones were killed


def members(sid: int) -> list[int]:
    """The living processes (not zombies) in session `sid`, this process excepted."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found = []
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()  # state, ppid, pgrp, session, …
        if len(fields) > 3 and fields[0] not in (b"Z", b"X") and int(fields[3]) == sid:
            found.append(int(entry))
    return found


def kill_session(sid: int) -> int:
    """SIGKILL every process of session `sid`, again for those forked meanwhile, until a pass
    finds none not yet killed (at most MAX_PASSES). Returns how many were signalled."""
    killed: set[int] = set()
    for _ in range(MAX_PASSES):
        fresh = [pid for pid in members(sid) if pid not in killed]
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
    return len(killed)
