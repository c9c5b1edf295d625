"""The pair's move on a person's `arbitrate` (rooms.core.summons): to the arbiter, or, when the
arbitrations allowed for the task are used, to the people."""

from __future__ import annotations

from rooms.base.records import Change, FiringDraft, OutboxDraft
from rooms.base.words import SUMMONED
from rooms.core.escalations import ask
from rooms.core.protocol import Step, decided
from rooms.core.summons import capped, firing
from rooms.pair import states


def summon_change(step: Step) -> Change:
    task, room, policy = step.task, step.room, step.policy
    assert task.summon is not None
    fired = firing(task.summon)
    change = Change(
        task.id,
        step.now,
        expect_version=task.version,
        expect_lease=step.owner,
        event=SUMMONED,
        firing=FiringDraft(fired, None, acted=True),
    )
    if capped(task, policy):
        limit = policy.thresholds.max_arbitrations
        change.event = states.SUMMON_CAPPED
        change.take_summon = True  # answered by the people, not again after their answer
        change.escalation = ask(
            task,
            room,
            policy,
            table=states.TABLE,
            kind="arbitration_cap",
            question=(
                f"{task.summon.by} called the arbiter, but the {limit} arbitrations allowed "
                "for this task are used. How should the owner go on?"
            ),
            reason=fired.reason,
        )
    else:
        change.outbox.append(
            OutboxDraft(
                f"summon:{task.id}:{task.version}",
                room,
                f"🔎 {fired.reason} → calling the arbiter.",
            )
        )
    return decided(states.TABLE, task, change)
