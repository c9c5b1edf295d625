"""The adapter between the deliberation machines and the driver: the state table it builds, and
the replay of a task's turns (cached, but never across two tasks that only share an id)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from rooms.base.model import GroupPolicy, RoomRef, Task, Thresholds, Turn
from rooms.base.words import ANSWER, CLOSED, STOP, WAITING_HUMAN
from rooms.core import registry as protocols
from rooms.core.protocol import Step
from rooms.core.registry import by_command, register
from rooms.debate.protocol import DEBATE
from rooms.judge.history import History
from rooms.phased.deliberation import Ask, Conclusion, Post, Reply
from rooms.phased.protocol import PhasedProtocol
from rooms.resolve.protocol import RESOLVE
from tests.fakes.engine_kit import engine_kit
from tests.rooms.debate import scripts as debate


def test_the_protocols_open_by_their_command_words() -> None:
    assert {w: by_command(w).name for w in ("debate", "resolve", "arena")} == {  # type: ignore[union-attr]
        "debate": "debate",
        "resolve": "resolve",
        "arena": "arena",
    }


def test_the_table_moves_between_phases_closes_and_asks_the_people() -> None:
    table = RESOLVE.table
    assert table.initial == "positions"
    assert table.next("design", "positions") == "positions"  # a second round of talk goes back
    assert table.next("execute", "done") == CLOSED
    assert table.next("design", "people") == WAITING_HUMAN
    assert all(table.next(s, STOP) == CLOSED for s in table.open_statuses)
    assert table.next(WAITING_HUMAN, ANSWER) == CLOSED  # the person's answer is the decision
    assert table.actor(WAITING_HUMAN) is None and table.actor("design") == "resolve"


def task(created: float) -> Task:
    return Task(
        id=1,
        room="t:C1:T1",
        group="g",
        text="Move billing",
        status="frame",
        version=0,
        created_at=created,
        updated_at=created,
        protocol="debate",
    )


def turn(i: int, role: str, output: str, at: float) -> Turn:
    return Turn(
        id=i, task_id=1, seq=i, role=role, status="done", output=output, started_at=at, ended_at=at
    )


def step(t: Task, turns: list[Turn]) -> Step:
    return Step(
        task=t,
        room=RoomRef("t", "C1", "T1"),
        policy=GroupPolicy(name="g"),
        history=History(turns, [], [], []),
        limits=Thresholds(),
        now=0.0,
        owner="e",
    )


def test_replay_is_the_same_with_and_without_the_cache_and_never_mixes_two_tasks() -> None:
    frame = json.dumps(debate.frame())
    first = [turn(1, "advocate", frame, 1.0), turn(2, "challenger", frame, 2.0)]
    s1 = DEBATE.replay(step(task(0.0), first))
    assert s1.state.phase == "briefs" and s1.pending == []
    # another store's task 1, same turn ids, other outputs: not taken for the cached one
    other = [turn(1, "advocate", json.dumps(debate.frame(False, horizon="a year")), 5.0)]
    s2 = DEBATE.replay(step(task(4.0), other))
    assert s2.state.phase == "frame" and [r.key for r in s2.pending] == ["advocate"]
    # and back: the first task replays from scratch to the same state
    again = DEBATE.replay(step(task(0.0), first))
    assert again.state == s1.state


class Stuck:
    """A machine whose second phase asks for nobody (a bug the adapter must not loop on)."""

    name, command, phases = "stuck", "stuck", ("one", "two")

    def start(self, task: Task, policy: GroupPolicy) -> str:
        return "one"

    def phase(self, state: str) -> str:
        return state

    def plan(self, state: str, policy: GroupPolicy) -> list[Ask]:
        return [Ask("actor", "debate-referee", "go")] if state == "one" else []

    def advance(
        self, state: str, replies: Sequence[Reply], policy: GroupPolicy, now: float
    ) -> tuple[str, list[Post], Conclusion | None]:
        return "two", [], None

    def opened_text(self, user: str) -> str:
        return "stuck opened"

    def label(self, phase: str) -> str:
        return phase


async def test_a_phase_that_asks_for_nobody_asks_the_people_instead_of_looping(
    tmp_path: Path,
) -> None:
    stuck = PhasedProtocol(Stuck())
    register(stuck)
    try:
        async with engine_kit(tmp_path, {"actor": ["done"]}) as kit:
            await kit.say("@tribunal stuck now")
            await kit.settle()
            task = await kit.task()
            assert task.status == WAITING_HUMAN and len(kit.runner.calls) == 1
            esc = await kit.store.open_escalation(task.id)
            assert esc is not None and esc.reason == "no run is due in the two phase"
    finally:
        protocols.unregister("stuck")
