"""An engine wired to the scripted runner and the recording platform, for engine tests.

async with engine_kit(tmp_path, {"owner": ["DONE"], "reviewer": ["APPROVED"]}) as kit:
    await kit.say("build a parser")
    await kit.settle()
    assert (await kit.task()).status == "closed"
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rooms.base.model import GroupPolicy, Inbound, RoomRef, Task
from rooms.base.ports import Clock, Runner
from rooms.engine import Engine
from rooms.references.port import ReferencePool
from rooms.store import Store
from tests.fakes.platform import RecordingPlatform
from tests.fakes.runner import Script, ScriptedRunner

ROOM = RoomRef("test", "C1", "T1")


@dataclass
class StaticPolicies:
    """Rooms on channel `channel` of platform `platform` belong to the one group."""

    policy: GroupPolicy
    platform: str = "test"
    channel: str = "C1"

    def for_room(self, room: RoomRef) -> GroupPolicy | None:
        if room.platform == self.platform and room.channel == self.channel:
            return self.policy
        return None


class FakeClock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class Kit:
    store: Store
    runner: ScriptedRunner
    platform: RecordingPlatform
    policies: StaticPolicies
    engine: Engine
    room: RoomRef = ROOM
    events: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def policy(self) -> GroupPolicy:
        return self.policies.policy

    async def say(
        self,
        text: str,
        *,
        user: str = "alice",
        mention: bool = True,
        event_id: str | None = None,
        room: RoomRef | None = None,
        from_bot: bool = False,
    ) -> None:
        self.events += 1
        await self.engine.handle(
            Inbound(
                room=room or self.room,
                user=user,
                text=text,
                event_id=event_id or f"ev-{self.events}",
                mentions_bot=mention,
                from_bot=from_bot,
            )
        )

    async def click(self, action: str, value: str, *, user: str = "boss") -> None:
        self.events += 1
        await self.engine.handle(
            Inbound(
                room=self.room,
                user=user,
                event_id=f"click-{self.events}",
                action=action,
                action_value=value,
            )
        )

    async def task(self, task_id: int = 1) -> Task:
        task = await self.store.task(task_id)
        assert task is not None
        return task

    async def settle(self, timeout: float = 15.0) -> None:
        async with asyncio.timeout(timeout):
            await self.engine.idle()

    async def escalation_id(self) -> str:
        esc = await self.store.open_escalation(1)
        assert esc is not None, "expected an open escalation"
        return str(esc.id)

    def roles(self) -> list[str]:
        return [c.role for c in self.runner.calls]


@asynccontextmanager
async def engine_kit(
    tmp_path: Path,
    script: Script | None = None,
    *,
    policy: GroupPolicy | None = None,
    approvers: frozenset[str] = frozenset({"boss"}),
    clock: Clock | None = None,
    lease_s: float = 30.0,
    data_dir: str | None = None,
    db: str | None = None,
    start: bool = True,
    runner: ScriptedRunner | None = None,
    references: ReferencePool | None = None,
    commands: Runner | None = None,
) -> AsyncIterator[Kit]:
    """`commands`: what runs the engine's own `command` runs (e.g. tests/fakes/commands.py)."""
    store = await Store.open(db or str(tmp_path / "tribunal.db"))
    runner = runner or ScriptedRunner(script, commands=commands)
    platform = RecordingPlatform()
    # One reading per ruling: a script gives the arbiter one reply per ruling. The swap check,
    # on by default in the product, is tested with policies that leave it on
    # (tests/rooms/test_engine_swap_check.py, test_engine_references.py).
    base = policy or GroupPolicy(name="g", swap_check=False)
    policies = StaticPolicies(replace(base, approvers=approvers) if policy is None else base)
    engine = Engine(
        store,
        runner,
        platform,
        policies,
        clock=clock,
        lease_s=lease_s,
        data_dir=data_dir if data_dir is not None else str(tmp_path / "data"),
        references=references,
    )
    engine.outbox.first_backoff_s = 0.01
    if start:
        await engine.start()
    kit = Kit(store, runner, platform, policies, engine)
    try:
        yield kit
    finally:
        await engine.stop()
        await store.close()
