"""A local runner dies with the bot (issue 27 #13): Linux's parent-death signal.

The LocalBackend starts each runner in a session of its own, so a SIGKILL of the bot reaches no
runner: before this, the runner and its agent CLI lived on until their model request returned,
and nobody reaped them. `die_with_parent` (a `preexec_fn`, run in the forked child before exec)
asks the kernel for SIGTERM when the parent dies (`PR_SET_PDEATHSIG`); SIGTERM is the runner's
polite signal, on which it kills every process of its agent (runners/_procs.py, a subreaper) and
exits. The setting survives exec (not setuid ones) and is cleared in the runner's own children,
which the runner's cleanup covers.

Two details: the signal is tied to the *thread* that forked, and asyncio forks from the event
loop's thread, which in the bot is the main thread and lives as long as the process; and the
parent may die between fork and prctl, so the child compares its parent with the one it was
forked from and ends itself (SIGKILL: it has not exec'd yet, and still carries the bot's
signal handlers) when they differ. prctl is looked up once here, in the parent: a
dlopen in a forked child of a threaded process may deadlock. Elsewhere than Linux nothing is
done (the runner then outlives a killed bot, as before).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    with contextlib.suppress(OSError, AttributeError):
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
        return prctl
    return None


_PRCTL = _prctl()


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A `preexec_fn` that makes the child get `sig` when this process dies; None where the
    kernel has no such thing."""
    prctl = _PRCTL
    if prctl is None:
        return None
    parent = os.getpid()

    def in_child() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was asked for
            os.kill(os.getpid(), signal.SIGKILL)  # not exec'd yet: nothing of ours to clean

    return in_child
