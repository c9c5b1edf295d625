"""Questions to the humans (DESIGN §2, §3): asking one, and taking an answer to it.

An escalation is announced with Approve/Reject buttons whose value is its id. Only approvers
decide: a group with no approvers configured has nobody who may decide, and says so (its people
can still `stop` the task); text in the room can never make someone an approver. Approve, or a
written answer, sends the task back to the owner with the answer in its next prompt; Reject
closes it. A click on an escalation that is no longer open, or whose task has moved on, is stale
and changes nothing. Every reply goes through the outbox.
"""

from __future__ import annotations

from typing import Literal

from rooms.cards import decided_card, escalation_card
from rooms.context import Ctx
from rooms.decisions import complete_records
from rooms.machine import ANSWER, APPROVE, REJECT
from rooms.model import Action, GroupPolicy, RoomRef, Task
from rooms.records import (
    AnswerDraft,
    Change,
    Escalation,
    EscalationDraft,
    MessageDraft,
    OutboxDraft,
)

Answer = Literal["approve", "reject", "answer"]


def ask(
    task: Task,
    room: RoomRef,
    policy: GroupPolicy,
    *,
    kind: str,
    question: str,
    reason: str,
    options: tuple[str, ...] = (),
    show_reason: bool = True,
) -> EscalationDraft:
    """`show_reason=False`: the reason is stored, not posted again (it was just posted, as
    the arbiter's ruling is)."""

    def post(escalation_id: int) -> OutboxDraft:
        lines = [f"❓ Task #{task.id} needs a decision: {question}"]
        if reason and show_reason:
            lines.append(f"Why: {reason}")
        if options:
            lines.append("Options:")
            lines += [f"{n}. {option}" for n, option in enumerate(options, 1)]
        lines.append(
            "Approve to let the owner continue, Reject to close the task, or reply here with "
            f"an answer. {_who(policy)}"
        )
        value = str(escalation_id)
        return OutboxDraft(
            key=f"escalation:{escalation_id}",
            room=room,
            text="\n".join(lines),
            card=escalation_card(task.id, question, reason, options, _who(policy)),
            actions=(
                Action("approve", "Approve", value, "primary"),
                Action("reject", "Reject", value, "danger"),
            ),
        )

    return EscalationDraft(kind, question, options, reason, post)


def may_answer(policy: GroupPolicy, user: str, roles: frozenset[str] = frozenset()) -> bool:
    """An approver by name, or by a platform group (a Discord role) they are in."""
    return user in policy.approvers or not roles.isdisjoint(policy.approvers)


def _who(policy: GroupPolicy) -> str:
    if not policy.approvers:
        return _NO_APPROVERS
    return "Only approvers can answer: " + ", ".join(sorted(policy.approvers)) + "."


_NO_APPROVERS = (
    "No approvers are configured for this group, so nobody can answer here: set `approvers` in "
    "the group's settings. `stop` still closes the task."
)


def refusal(policy: GroupPolicy, user: str) -> str:
    if not policy.approvers:
        return f"{user}: {_NO_APPROVERS}"
    return f"{user}: only approvers can answer: {', '.join(sorted(policy.approvers))}."


async def answer(
    ctx: Ctx,
    task: Task,
    escalation: Escalation,
    room: RoomRef,
    *,
    user: str,
    kind: Answer,
    text: str = "",
    event_id: str | None = None,
) -> Task | None:
    """Apply an approver's answer; None when it lost a race (the caller re-reads and retries)."""
    comment = f" ({text})" if text and kind != "answer" else ""
    if kind == "reject":
        event, said = REJECT, f"rejected: {escalation.question}{comment}"
        reply = f"Task #{task.id} closed: {user} rejected the escalation."
    elif kind == "approve":
        event, said = APPROVE, f"approved: {escalation.question}{comment}"
        reply = f"{user} approved; the owner continues with task #{task.id}."
    else:
        event, said = ANSWER, text
        reply = f"{user} answered; the owner continues with task #{task.id}."
    applied = await ctx.store.apply(
        Change(
            task.id,
            ctx.now(),
            expect_version=task.version,
            event=event,
            event_id=event_id,
            answer=AnswerDraft(escalation.id, kind if kind != "answer" else text, user),
            message=MessageDraft(user, said, kind="answer", event_id=event_id),
            rounds="reset",
            grant=escalation.kind == "ceiling" and kind != "reject",
            outbox=[
                OutboxDraft(
                    f"answer:{escalation.id}",
                    room,
                    reply,
                    card=decided_card(escalation, user=user, kind=kind, text=text, at=ctx.now()),
                )
            ],
        )
    )
    if applied is not None:
        await complete_records(ctx, task.id)  # the answer: who, what, when
    return applied


def stale_reply(escalation_id: str) -> str:
    return (
        f"That question (escalation #{escalation_id}) is stale: it was already answered or the "
        "task has moved on. Nothing was changed."
    )
