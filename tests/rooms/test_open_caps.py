"""Caps on open tasks (rooms/base/open_caps.py, issue 24 item 13): one person, no approver needed,
opened 60 tasks (60 worktrees, 420 runner calls in 8 s). Past a cap a mention opens nothing and
its sender gets a private answer; the caps hold for messages handled at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rooms.base.model import GroupPolicy, Inbound, RoomRef
from rooms.base.open_caps import DEFAULT_PER_PERSON, OpenCaps
from tests.fakes.engine_kit import Kit, engine_kit
from tests.fakes.rulings import ruling_reply as ruling
from tests.fakes.runner import ScriptedRunner

# Each task asks the people at once and stays open, waiting for them.
WAITING = {"owner": "BLOCKED: need a decision", "arbiter": ruling("ESCALATE", question="Which?")}


def mention(kit: Kit, n: int, user: str) -> Inbound:
    return Inbound(
        room=RoomRef("test", "C1", f"T{n}"),
        user=user,
        text=f"@tribunal task number {n}",
        mentions_bot=True,
        event_id=f"open-{user}-{n}",
    )


async def open_tasks_of(kit: Kit) -> dict[str, int]:
    counts: dict[str, int] = {}
    for task in await kit.store.open_tasks():
        counts[task.opened_by] = counts.get(task.opened_by, 0) + 1
    return counts


async def test_one_person_cannot_open_sixty_tasks(tmp_path: Path) -> None:
    runner = ScriptedRunner(default=WAITING)
    async with engine_kit(tmp_path, runner=runner, approvers=frozenset({"boss"})) as kit:
        # All at once, as a script would send them: the cap is checked where the task is written.
        await asyncio.gather(*(kit.engine.handle(mention(kit, n, "mallory")) for n in range(60)))
        await kit.settle()
        assert await open_tasks_of(kit) == {"mallory": DEFAULT_PER_PERSON}
        assert len(runner.calls_for("owner")) == DEFAULT_PER_PERSON  # one owner turn per task
        refusals = [
            p.message
            for p in kit.platform.messages()
            if "you already have" in p.text and p.message.private_to == "mallory"
        ]
        assert len(refusals) == 60 - DEFAULT_PER_PERSON
        assert refusals[0].text == (
            f"mallory: you already have {DEFAULT_PER_PERSON} open tasks here, the most one person "
            f"may have (`max_open_tasks_per_person` = {DEFAULT_PER_PERSON}). Finish or `stop` one "
            "of them first; this message opened no task."
        )
        # Someone else in the channel is not held up by mallory's cap.
        await kit.engine.handle(mention(kit, 100, "carol"))
        await kit.settle()
        assert (await open_tasks_of(kit))["carol"] == 1


async def test_the_channel_cap_holds_for_everyone_and_a_closed_task_frees_a_place(
    tmp_path: Path,
) -> None:
    policy = GroupPolicy(
        name="g", approvers=frozenset({"boss"}), open_caps=OpenCaps(per_channel=3, per_person=2)
    )
    runner = ScriptedRunner(default=WAITING)
    async with engine_kit(tmp_path, runner=runner, policy=policy) as kit:
        for n, user in enumerate(["alice", "bob", "carol", "dave"]):
            await kit.engine.handle(mention(kit, n, user))
        await kit.settle()
        assert await open_tasks_of(kit) == {"alice": 1, "bob": 1, "carol": 1}
        [refusal] = [p.message for p in kit.platform.messages() if p.message.private_to == "dave"]
        assert refusal.text == (
            "dave: this channel already has 3 open tasks, the most it may have (`max_open_tasks` "
            "= 3). Wait until one is finished or stopped; this message opened no task."
        )
        assert refusal.room == RoomRef("test", "C1", "T3")
        await kit.engine.handle(
            Inbound(RoomRef("test", "C1", "T0"), "alice", "@tribunal stop", "stop-0", True)
        )
        await kit.engine.handle(mention(kit, 4, "dave"))
        await kit.settle()
        assert await open_tasks_of(kit) == {"bob": 1, "carol": 1, "dave": 1}
