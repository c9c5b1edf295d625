"""The arbiter on demand (DESIGN §4, §5): a person's `arbitrate [now] [note]`.

Anyone in the room may call the arbiter; only approvers decide what follows (an ESCALATE waits
for them as any other). The request is stored on the task (`Task.summon`) without moving it, so
the running turn finishes and is recorded as usual (with `now` it is stopped and marked
interrupted); then the driver asks the task's protocol to act on it before another turn starts
(a request that arrives while the task then waits for a person stays pending until it goes on):
the pair sends the task to arbitration with a `summoned` firing naming who asked and their note
or, when the arbitrations allowed for the task are used, to the people (rooms.pair.summons). A
summon counts toward that cap like any arbitration, and one ruling answers it, even when a
detector called the arbiter first.

A protocol takes summons where its state table has the `summoned` event
(rooms.base.machine.SUMMONED) and it implements `Summonable`; the store keeps a request only in
such a status.
"""

from __future__ import annotations

from typing import Protocol as Interface
from typing import runtime_checkable

from rooms.base.model import Firing, GroupPolicy, Summon, Task
from rooms.base.records import Change, Escalation
from rooms.base.words import SUMMONED, WAITING_HUMAN
from rooms.core.protocol import Protocol, Step

_NOTE_IN_REASON = 200  # characters of the note in the one-line reason; the prompt has it all


@runtime_checkable
class Summonable(Interface):
    """A protocol with a judge people can call."""

    async def summon(self, step: Step) -> Change:
        """The change a pending summon (`step.task.summon`) makes before the next turn."""
        ...


def accepts(protocol: Protocol, status: str) -> bool:
    return isinstance(protocol, Summonable) and SUMMONED in protocol.table.transitions.get(
        status, {}
    )


def not_summonable(
    task: Task | None, protocol: Protocol | None, escalation: Escalation | None
) -> str | None:
    """Why `arbitrate` cannot be taken here, for the person; None when it can."""
    if task is None or protocol is None:
        return (
            "There is no open task here for the arbiter to look at: `arbitrate` calls the "
            "arbiter on the task a pair is working on in this room. Mention me with a task to "
            "start one."
        )
    if task.status == WAITING_HUMAN:
        question = f" ({escalation.question})" if escalation else ""
        return (
            f"Task #{task.id} is already waiting for a person{question}: an approver answers "
            "it (approve, reject or a reply), or `stop` closes it."
        )
    if not any(accepts(protocol, s) for s in protocol.table.statuses):
        return f"Task #{task.id} ({protocol.name}) has no arbiter to call."
    if not accepts(protocol, task.status):
        return (
            f"Task #{task.id} is {protocol.label(task.status)} right now, so the arbiter is not "
            "called again; its ruling follows here."
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
    """The `summoned` firing: who asked, and their note (in full in `extra`)."""
    note = " ".join(summon.note.split())
    if len(note) > _NOTE_IN_REASON:
        note = note[: _NOTE_IN_REASON - 1] + "…"
    reason = f"{summon.by} called the arbiter" + (f": {note}" if note else "")
    return Firing(
        detector=SUMMONED,
        reason=reason,
        extra={"by": summon.by, "note": summon.note, "now": summon.now, "at": summon.at},
    )
