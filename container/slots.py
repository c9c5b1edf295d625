"""How many turns run at once, on either backend: `[limits] turns_at_once` runner slots.

Every turn's runner (an agent CLI and its tools: a few hundred MB and a share of the CPUs) takes
a slot for as long as it lives; the others wait for one in arrival order. Without a cap, 20
mentions on the local backend started 39 processes and 3.9 GB on 2 cores (issue 28).

A turn that has to wait says so with a `queued` event ("waiting for a runner slot", with how
many turns are ahead of it), and a `progress` event once it has its slot, so the room stops
showing the wait when the runner starts. A turn that gets a slot at once sends neither.

The default (`default_turns_at_once`): two turns per CPU this process may use, but no more than
one per GiB of the machine's memory, and at least one. A turn mostly waits for its model, so
two per CPU keeps the CPUs busy; a GiB is what an agent CLI with a test run or a build beside
it takes, so memory never runs out before the CPUs do.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing

from runners.protocol import RunEvent

TURNS_PER_CPU = 2
MEMORY_PER_TURN = 1024**3  # bytes
WAITING = "waiting for a runner slot"
STARTING = "got a runner slot; starting the runner"


def cpus_available() -> int:
    """The CPUs this process may run on (its affinity), else the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def memory_bytes() -> int | None:
    """The machine's physical memory, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def default_turns_at_once(cpus: int | None = None, memory: int | None = None) -> int:
    """The module docstring's rule: min(2 × CPUs, memory in whole GiB), at least 1."""
    cpus = cpus if cpus is not None else cpus_available()
    memory = memory if memory is not None else memory_bytes()
    by_cpu = TURNS_PER_CPU * max(1, cpus)
    by_memory = by_cpu if memory is None else memory // MEMORY_PER_TURN
    return max(1, min(by_cpu, by_memory))


class TurnSlots:
    """At most `size` runs at once; the others wait in arrival order (asyncio's semaphore
    wakes its waiters first in, first out)."""

    def __init__(self, size: int | None = None) -> None:
        size = default_turns_at_once() if size is None else size
        if size < 1:
            raise ValueError(f"turns_at_once must be at least 1 (got {size})")
        self.size = size
        self.running = 0
        self.waiting = 0
        self._free: asyncio.Semaphore | None = None  # made in the event loop that uses it

    async def run(
        self,
        start: Callable[[], AsyncIterator[RunEvent]],
        freed: Callable[[], None] | None = None,
    ) -> AsyncGenerator[RunEvent, None]:
        """The events of `start()`, begun once a slot is free and closed (which stops the run)
        before the slot is given back; closing or cancelling this iteration while it waits
        leaves the queue. `freed` is called once the run's slot is given back (the local
        backend starts a spare runner then: container/spares.py)."""
        if self._free is None:
            self._free = asyncio.Semaphore(self.size)
        free = self._free
        if free.locked():
            ahead = self.waiting
            self.waiting += 1
            # In the queue before the room is told: a slot freed meanwhile is this turn's,
            # not a later arrival's.
            acquiring = asyncio.ensure_future(free.acquire())
            try:
                yield RunEvent(kind="queued", text=_waiting_text(ahead, self.size))
                await acquiring
            except BaseException:  # closed or cancelled while waiting
                if acquiring.done() and not acquiring.cancelled():
                    free.release()
                else:
                    acquiring.cancel()
                raise
            finally:
                self.waiting -= 1
            waited = True
        else:
            await free.acquire()  # free: no wait (nothing awaits between the check and this)
            waited = False
        self.running += 1
        try:
            if waited:
                yield RunEvent(kind="progress", text=STARTING)
            async with aclosing(_iterate(start())) as events:
                async for event in events:
                    yield event
        finally:
            self.running -= 1
            free.release()
            if freed is not None:
                freed()


def _waiting_text(ahead: int, size: int) -> str:
    turns = "turn" if size == 1 else "turns"
    queue = f", {ahead} ahead of this one" if ahead else ""
    return f"{WAITING} ({size} {turns} at once{queue})"


async def _iterate(events: AsyncIterator[RunEvent]) -> AsyncGenerator[RunEvent, None]:
    """`events` as a generator whose closing closes them too (a backend's run stops then)."""
    try:
        async for event in events:
            yield event
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
