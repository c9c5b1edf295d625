"""The bot process made non-dumpable when its turns run on the local backend.

On the local backend an agent runs as the bot's own user (container/local.py: no isolation). A
process of that user may open any file of a *dumpable* process of that user through
/proc/<pid>: so the agent could open the bot's end of a runner's stdout pipe as
/proc/<bot pid>/fd/<n> (Linux reopens a pipe through that link, for writing too) and write
events into it that the bot would take for its runner's, read the bot's environment (model keys,
platform tokens) in /proc/<bot pid>/environ, or its memory. The runners protect their own end
of the pipe the same way (runners/_procs.py `become_undumpable`).

What `PR_SET_DUMPABLE` 0 does: /proc/<pid>/fd, fdinfo, environ, mem, maps belong to root and the
kernel refuses them, and ptrace, to any process without CAP_SYS_PTRACE (every process of the
same user that is not root); core dumps of the bot are off. Children the bot starts get the
default back when they exec, so the runners and the agents' tools behave as before.

What it does not: root, or a process with CAP_SYS_PTRACE, still reads all of it; a process of the
same user can still read and write every file the bot can (the database, `.env`,
`tribunal.toml`, the data folder, this checkout) by its path, and signal or kill the bot; the
local backend stays unisolated, and the docker backend is the isolation (there the agents run as
another user in their own pid namespace, and see no /proc of the bot at all). Linux only; where
prctl cannot be called, a warning says that the bot stays dumpable.
"""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger(__name__)

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4


def become_undumpable() -> bool:
    """Make this process non-dumpable; False (with a warning in the log) when it cannot be."""
    if not sys.platform.startswith("linux"):
        log.warning(
            "not on Linux (%s): the bot process stays dumpable, so a local agent of the same "
            "user may read its /proc entries",
            sys.platform,
        )
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        done = libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
        errno = ctypes.get_errno()
    except (OSError, AttributeError) as exc:
        log.warning("prctl is unavailable (%s): the bot process stays dumpable", exc)
        return False
    if not done:
        log.warning("prctl(PR_SET_DUMPABLE, 0) failed (errno %s): the bot stays dumpable", errno)
    return bool(done)


def dumpable() -> int | None:
    """PR_GET_DUMPABLE of this process (1: dumpable, 0: not); None where it cannot be asked."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
    except (OSError, AttributeError):
        return None
