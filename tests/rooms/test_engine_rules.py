"""The rule table of what a finished owner/reviewer turn leads to (rooms.pair.rounds), driven
directly: marker, detectors, ceilings and the engine's caps → transition event and escalation."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from rooms.base.markers import find_marker
from rooms.base.model import Firing, GroupPolicy, RoomRef, Ruling, Task, Thresholds, Turn
from rooms.base.records import Change, FiringRow, VerdictRow
from rooms.core.protocol import Step
from rooms.core.turns import RunOutcome
from rooms.judge.history import History
from rooms.pair.rounds import after_work_turn

ROOM = RoomRef("test", "C1", "T1")
NOW = 1_000_000.0
POLICY = GroupPolicy(name="g")


@dataclass
class Case:
    name: str
    role: str
    output: str
    before: list[tuple[str, str]] = field(default_factory=list)  # done turns: (role, output)
    arbitrations: int = 0
    thresholds: Thresholds = Thresholds()
    event: str = ""
    escalation: str | None = None
    detector: str | None = None
    acted: bool = True
    unmarked: bool = False


SAME_OWNER = "DONE\nno change from me"
SAME_REVIEW = "CHANGES_REQUESTED\n- parse() returns None for ''"

CASES = [
    Case("owner done", "owner", "DONE\nimplemented", event="DONE"),
    Case("owner done with concerns", "owner", "DONE_WITH_CONCERNS\nhm", event="DONE"),
    Case("owner unmarked", "owner", "implemented it", event="DONE", unmarked=True),
    Case("owner blocked", "owner", "BLOCKED: no key", event="BLOCKED", detector="blocked"),
    Case(
        "owner needs context",
        "owner",
        "NEEDS_CONTEXT: which DB?",
        event="NEEDS_CONTEXT",
        detector="blocked",
    ),
    Case("reviewer approves", "reviewer", "APPROVED", [("owner", "DONE")], event="APPROVED"),
    Case("reviewer LGTM", "reviewer", "lgtm!", [("owner", "DONE")], event="APPROVED"),
    Case(
        "reviewer unmarked",
        "reviewer",
        "please add tests",
        [("owner", "DONE")],
        event="CHANGES_REQUESTED",
        unmarked=True,
    ),
    Case(
        "reviewer blocked",
        "reviewer",
        "BLOCKED: cannot run the tests",
        [("owner", "DONE")],
        event="BLOCKED",
        detector="blocked",
    ),
    Case(
        "stagnation is a deadlock",
        "reviewer",
        SAME_REVIEW,
        [("owner", SAME_OWNER), ("reviewer", SAME_REVIEW)] * 2 + [("owner", SAME_OWNER)],
        event="deadlock",
        detector="stagnation",
    ),
    Case(
        "arbitrations used up",
        "owner",
        "BLOCKED: no key",
        arbitrations=2,
        event="ceiling",
        escalation="arbitration_cap",
        detector="blocked",
    ),
    Case(
        "a lower cap",
        "owner",
        "BLOCKED: no key",
        arbitrations=1,
        thresholds=Thresholds(max_arbitrations=1),
        event="ceiling",
        escalation="arbitration_cap",
        detector="blocked",
    ),
    Case(
        "turn ceiling",
        "owner",
        "DONE",
        [("owner", "DONE"), ("reviewer", "CHANGES_REQUESTED")],
        thresholds=Thresholds(max_turns=3),
        event="ceiling",
        escalation="ceiling",
        detector="ceiling",
    ),
    Case(
        "ceiling beats blocked",
        "owner",
        "BLOCKED: no key",
        thresholds=Thresholds(max_turns=1),
        event="ceiling",
        escalation="ceiling",
        detector="ceiling",
    ),
    Case(
        "approval beats a ceiling",
        "reviewer",
        "APPROVED",
        [("owner", "DONE")],
        thresholds=Thresholds(max_turns=2),
        event="APPROVED",
        detector="ceiling",
        acted=False,
    ),
    Case(
        "cost ceiling",
        "owner",
        "DONE",
        thresholds=Thresholds(max_cost_usd=0.5),
        event="ceiling",
        escalation="ceiling",
        detector="ceiling",
    ),
]


def build(case: Case) -> tuple[Task, Turn, History]:
    turns = [
        Turn(
            id=n,
            task_id=1,
            seq=n,
            role=role,
            status="done",
            output=text,
            marker=find_marker(text, "owner" if role == "owner" else "reviewer"),
            started_at=NOW,
            ended_at=NOW,
        )
        for n, (role, text) in enumerate(case.before, 1)
    ]
    current = Turn(
        id=len(turns) + 1,
        task_id=1,
        seq=len(turns) + 1,
        role=case.role,
        status="running",
        started_at=NOW,
    )
    task = Task(
        id=1,
        room=ROOM.key,
        group="g",
        text="t",
        status="owner_turn" if case.role == "owner" else "review_turn",
        version=7,
        arbitrations=case.arbitrations,
        turns=len(turns) + 1,
        created_at=NOW,
        updated_at=NOW,
        cost_usd=0.6 if case.thresholds.max_cost_usd < 1 else 0.0,
    )
    return task, current, History([*turns, current], [], [], [])


async def decide(case: Case, history: History | None = None) -> Change:
    task, turn, built = build(case)
    step = Step(task, ROOM, POLICY, history or built, case.thresholds, now=NOW, owner="E")
    return await after_work_turn(step, turn, RunOutcome(output=case.output, got_final=True))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_rule(case: Case) -> None:
    change = await decide(case)
    assert change.event == case.event
    assert change.expect_version == 7 and change.expect_lease == "E"
    assert change.turn is not None and change.turn.unmarked == case.unmarked
    assert (change.escalation.kind if change.escalation else None) == case.escalation
    assert (change.firing.firing.detector if change.firing else None) == case.detector
    if change.firing is not None:
        assert change.firing.acted == case.acted
    assert change.rounds == ("inc" if case.role == "reviewer" else None)
    assert change.outbox[0].persona == case.role  # the output is posted under its role


async def test_the_same_blocked_reason_after_a_proceed_escalates_a_different_one_does_not() -> None:
    blocked = Case("b", "owner", "BLOCKED: no key for staging")
    first = await decide(blocked)
    assert first.firing is not None
    earlier = FiringRow(1, 1, 1, first.firing.firing, True, NOW)
    proceed = VerdictRow(1, 1, 2, 2, 1, Ruling(verdict="PROCEED"), None, NOW)
    revise = VerdictRow(1, 1, 2, 2, 1, Ruling(verdict="REVISE"), None, NOW)

    _, _, history = build(blocked)
    again = await decide(blocked, History(history.turns, [], [proceed], [earlier]))
    assert again.event == "ceiling" and again.escalation is not None
    assert again.escalation.kind == "repeat"

    other = Case("o", "owner", "BLOCKED: the CI runner has no network")
    differs = await decide(other, History(build(other)[2].turns, [], [proceed], [earlier]))
    assert differs.event == "BLOCKED" and differs.escalation is None

    after_revise = await decide(blocked, History(history.turns, [], [revise], [earlier]))
    assert after_revise.event == "BLOCKED" and after_revise.escalation is None


async def test_a_firing_without_a_fingerprint_is_never_a_repeat() -> None:
    case = Case("r", "owner", "BLOCKED: x")
    earlier = FiringRow(1, 1, 1, Firing(detector="blocked", reason="r"), True, NOW)
    proceed = VerdictRow(1, 1, 2, 2, 1, Ruling(verdict="PROCEED"), None, NOW)
    _, _, history = build(case)
    change = await decide(case, History(history.turns, [], [proceed], [earlier]))
    assert change.event == "BLOCKED"
