"""What every part of the engine shares: the store, the ports, who we are, and two callbacks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rooms.base.ports import Clock, Platform, Policies, Runner, SignInLinks
from rooms.references.port import NoReferences, ReferencePool

if TYPE_CHECKING:  # the store checks moves against the protocols, which use this context
    from rooms.store import Store


@dataclass
class Ctx:
    store: Store
    runner: Runner
    platform: Platform
    policies: Policies
    clock: Clock
    engine_id: str
    lease_s: float
    data_dir: str | None
    references: ReferencePool = field(default_factory=NoReferences)  # asked before each ruling
    sign_in: SignInLinks | None = None  # the dashboard's links (`dashboard`), when it is on
    # Set by the engine: wake the outbox deliverer after enqueueing; (re)start a task's driver.
    wake_outbox: Callable[[], None] = lambda: None
    spawn: Callable[[int], None] = lambda task_id: None
    # Set by an engine that is woken by the store (PostgreSQL's LISTEN/NOTIFY): a driver that
    # finds the task's lease held elsewhere hands the task to it (which looks again when that
    # lease ends) and stops, instead of polling the lease every `lease_poll_s`.
    lease_elsewhere: Callable[[int], None] | None = None
    # Why a task's driver was cancelled (shown on the interrupted turn), by task id.
    stop_reasons: dict[int, str] = field(default_factory=dict)
    # Set while a turn of the task runs in this process (rooms.core.turns.run_turn): setting it
    # stops that turn, which is recorded as interrupted while its driver goes on (`arbitrate now`).
    # A future, not an Event: run_turn waits on it beside the run itself, with no task of its own.
    turn_interrupts: dict[int, asyncio.Future[None]] = field(default_factory=dict)

    def interrupt_turn(self, task_id: int, reason: str) -> bool:
        """Stop the task's running turn here, if any, without stopping its driver."""
        stop = self.turn_interrupts.get(task_id)
        if stop is None:
            return False
        self.stop_reasons[task_id] = reason
        if not stop.done():
            stop.set_result(None)
        return True

    def now(self) -> float:
        """Business time: timestamps, the wall-time ceiling (a test may move it)."""
        return self.clock.now()

    @staticmethod
    def wall() -> float:
        """Coordination time between processes: leases and outbox claims follow real time,
        because the heartbeats that renew them sleep in real time."""
        return time.time()

    @property
    def heartbeat_s(self) -> float:
        """How often a held lease is renewed: three times per lease, so one late renewal is
        harmless."""
        return max(self.lease_s / 3.0, 0.05)

    @property
    def lease_poll_s(self) -> float:
        """How often a driver looks again at a task whose lease another engine holds."""
        return min(self.heartbeat_s, 1.0)
