"""The arbiter on demand (DESIGN §4, §5): a person's `arbitrate [now] [note]`.

Anyone in the room may call the arbiter; only approvers decide what follows (an ESCALATE waits
for them as any other). The request is stored on the task (`Task.summon`) without moving it, so
the running turn finishes and is recorded as usual (with `now` it is stopped and marked
interrupted); then the driver acts on the request before it starts another turn: the task goes to
arbitration with a `summoned` firing naming who asked and their note, or, when the arbitrations
allowed for the task are used, to the people (waiting_human). A summon counts toward that cap
like any arbitration, and one ruling answers it, even when a detector called the arbiter first.
"""

from __future__ import annotations

from rooms.escalations import ask
from rooms.model import Firing, GroupPolicy, RoomRef, Summon, Task
from rooms.pair.states import SUMMONABLE
from rooms.records import Change, Escalation, FiringDraft, OutboxDraft

__all__ = ["SUMMONABLE", "acknowledgement", "not_summonable", "summon_change"]
SUMMONED = "summoned"  # the firing's detector name (model.Firing)
_NOTE_IN_REASON = 200  # characters of the note in the one-line reason; the prompt has it all


def not_summonable(task: Task | None, escalation: Escalation | None) -> str | None:
    """Why `arbitrate` cannot be taken here, for the person; None when it can."""
    if task is None:
        return (
            "There is no open task here for the arbiter to look at: `arbitrate` calls the "
            "arbiter on the task a pair is working on in this room. Mention me with a task to "
            "start one."
        )
    if task.status == "arbitration":
        return f"The arbiter is already ruling on task #{task.id}; its ruling follows here."
    if task.status == "waiting_human":
        question = f" ({escalation.question})" if escalation else ""
        return (
            f"Task #{task.id} is already waiting for a person{question}: an approver answers "
            "it (approve, reject or a reply), or `stop` closes it."
        )
    if task.summon is not None:
        return (
            f"The arbiter is already called on task #{task.id} (by {task.summon.by}); it rules "
            "when the running turn ends."
        )
    return None


def capped(task: Task, policy: GroupPolicy) -> bool:
    return task.arbitrations >= policy.thresholds.max_arbitrations


def acknowledgement(task: Task, policy: GroupPolicy, *, by: str, now: bool, running: bool) -> str:
    """What the person is told when their request is stored."""
    limit = policy.thresholds.max_arbitrations
    if capped(task, policy):
        when = "now" if now or not running else "when the running turn ends"
        return (
            f"{by}: the {limit} arbitrations allowed for task #{task.id} are used, so the "
            f"arbiter is not called again; {when} the task waits for an approver to decide."
        )
    if not running:
        return f"⚖️ {by} called the arbiter on task #{task.id}; it rules next."
    if now:
        return f"⚖️ {by} called the arbiter on task #{task.id}: the running turn is stopped."
    return (
        f"⚖️ {by} called the arbiter on task #{task.id}: it rules when the running turn "
        "ends (`arbitrate now` stops that turn)."
    )


def firing(summon: Summon) -> Firing:
    note = " ".join(summon.note.split())
    if len(note) > _NOTE_IN_REASON:
        note = note[: _NOTE_IN_REASON - 1] + "…"
    reason = f"{summon.by} called the arbiter" + (f": {note}" if note else "")
    return Firing(
        detector=SUMMONED,
        reason=reason,
        extra={"by": summon.by, "note": summon.note, "now": summon.now, "at": summon.at},
    )


def summon_change(
    task: Task, room: RoomRef, policy: GroupPolicy, *, now: float, owner: str
) -> Change:
    """The driver's move on a pending summon: to the arbiter, or past the cap to the people."""
    assert task.summon is not None
    fired = firing(task.summon)
    change = Change(
        task.id,
        now,
        expect_version=task.version,
        expect_lease=owner,
        event=SUMMONED,
        firing=FiringDraft(fired, None, acted=True),
    )
    if capped(task, policy):
        limit = policy.thresholds.max_arbitrations
        change.event = "summon_capped"
        change.escalation = ask(
            task,
            room,
            policy,
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
    return change
