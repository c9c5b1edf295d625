"""Questions to the humans (DESIGN §2, §3): asking one, and taking an answer to it.

An escalation is announced with buttons: a yes/no question (no options) with Approve/Reject, whose
value is its id; a question with options with one button per option plus Reject
(rooms.core.choices: the value binds the option's number to the escalation), and a choice sends
the option's stored text on as the answer. Only approvers
decide: a group with no approvers configured has nobody who may decide, and says so (its people
can still `stop` the task); text in the room can never make someone an approver. What each
answer does is the protocol's (its table's moves from `waiting_human`), and the room is told in
those words (`Wording`): in the pair, Approve or a written answer sends the task back to the owner
with the answer in its next prompt and Reject closes it; in arena, debate and resolve every answer
closes the task, and nothing runs after it. A click on an escalation that is no longer open, or
whose task has moved on, is stale and changes nothing. Every reply goes through the outbox.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rooms.base.machine import StateTable
from rooms.base.model import Action, GroupPolicy, RoomRef, Task
from rooms.base.records import (
    AnswerDraft,
    Change,
    Escalation,
    EscalationDraft,
    MessageDraft,
    OutboxDraft,
)
from rooms.base.words import ANSWER, APPROVE, CEILING, CLOSED, REJECT, WAITING_HUMAN
from rooms.core.cards import decided_card, escalation_card
from rooms.core.choices import choice_actions, recorded
from rooms.core.context import Ctx
from rooms.core.decisions import complete_records

Answer = Literal["approve", "reject", "answer", "choose"]


@dataclass(frozen=True)
class Wording:
    """What Approve, Reject and a written answer do to a task waiting for a person, in the words
    the escalation's text, its card and the reply to an answer use. Read from the protocol's
    table by `wording`, so the room is told what the move does: a protocol with no owner is never
    told "the owner continues"."""

    instruction: str  # under the question: "Approve to …, Reject to …, or reply here …"
    footer: str  # the card's: "Approve lets …, Reject closes …"
    replies: dict[str, str]  # answer kind → the reply, with {user} and {task} to fill

    def reply(self, kind: str, user: str, task_id: int) -> str:
        template = self.replies.get(kind, "{user} answered task #{task}.")
        return template.format(user=user, task=task_id)  # only our templates are formatted


def wording(table: StateTable, *, kind: str = "", choices: bool = False) -> Wording:
    """The words for `table`'s moves from `waiting_human`: to an open status, its actor goes on
    ("the owner continues"); to `closed`, the task ends here. A move the table lacks is not
    offered in words (the store would refuse it). `kind`: the escalation's; at a ceiling that
    a written answer would not end, the answer is a note and the task keeps waiting
    (`needs_approval`). `choices`: the question offers options (`offers_choices`), so a choice
    takes Approve's place in the words."""
    moves = table.transitions.get(WAITING_HUMAN, {})

    def goes_on(event: str) -> str | None:
        """The actor the event hands the task to; "" when it closes the task; None: no move."""
        target = moves.get(event)
        if target is None:
            return None
        return "" if target == CLOSED else (table.actors.get(target) or "task")

    approve, reject, answer = goes_on(APPROVE), goes_on(REJECT), goes_on(ANSWER)
    to_do: list[str] = []  # "Approve to …"
    does: list[str] = []  # "Approve lets …"
    replies: dict[str, str] = {}
    if choices:
        goes = (
            f"let the {answer} continue with it" if answer else "keep it on the task and close it"
        )
        to_do.append(f"choose an option (its button, or `choose N`) to {goes}")
        does.append(
            f"a chosen option lets the {answer} continue with it"
            if answer
            else "a chosen option is kept on the task and closes it"
        )
        replies["choose"] = (
            f"{{user}} chose an option; the {answer} continues with task #{{task}}."
            if answer
            else "Task #{task} closed: {user} chose an option (kept on the task)."
        )
    elif approve:
        to_do.append(f"Approve to let the {approve} continue")
        does.append(f"Approve lets the {approve} continue")
        replies["approve"] = f"{{user}} approved; the {approve} continues with task #{{task}}."
    elif approve == "":
        to_do.append("Approve to accept the outcome as it stands and close the task")
        does.append("Approve accepts the outcome as it stands and closes the task")
        replies["approve"] = "Task #{task} closed: {user} approved."
    if reject:
        to_do.append(f"Reject to send the task back to the {reject}")
        does.append(f"Reject sends it back to the {reject}")
        replies["reject"] = f"{{user}} rejected; the {reject} continues with task #{{task}}."
    elif reject == "":
        closes_too = approve == ""  # then Reject differs from Approve only in what is recorded
        to_do.append(f"Reject to {'turn it down and ' if closes_too else ''}close the task")
        does.append(
            "Reject turns it down and closes it" if closes_too else "Reject closes the task"
        )
        replies["reject"] = "Task #{task} closed: {user} rejected the escalation."
    if answer and needs_approval(kind, table):
        to_do.append("reply here to add a note (the task keeps waiting: only Approve grants more)")
    elif answer:
        to_do.append("reply here with an answer")
        replies["answer"] = f"{{user}} answered; the {answer} continues with task #{{task}}."
    elif answer == "":
        to_do.append("reply here with an answer, which is kept on the task and closes it too")
        does.append("an answer is kept on the task and closes it too")
        replies["answer"] = "Task #{task} closed: {user} answered (the answer is kept on the task)."
    ends = all(goes_on(e) in ("", None) for e in (APPROVE, REJECT, ANSWER))
    after = f" Nothing more runs in this {table.protocol}." if ends else ""
    return Wording(
        instruction=_capital(_listed(to_do)) + "." + after if to_do else after.strip(),
        footer=", ".join(does) + "." + after if does else after.strip(),
        replies=replies,
    )


def needs_approval(kind: str, table: StateTable) -> bool:
    """A ceiling asks for another budget, and only an explicit approval (the button, or the
    `approve` command) grants one: a remark such as "why is this so expensive? let me look"
    is a note for the task, which keeps waiting. Where a written answer closes the task (the
    deliberation protocols), it grants nothing and is taken as before."""
    target = table.transitions.get(WAITING_HUMAN, {}).get(ANSWER)
    return kind == CEILING and target not in (None, CLOSED)


def noted_reply(user: str, task_id: int) -> str:
    """The reply to an approver's remark at a ceiling: kept, nothing granted, how to grant."""
    return (
        f"{user}: noted on task #{task_id}; it still waits at its ceiling. Approve (the button, "
        "or `approve`) grants another budget of the same size; Reject (or `reject`) closes it."
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def offers_choices(kind: str, options: tuple[str, ...], table: StateTable) -> bool:
    """One button per option only where a choice can be taken as the answer: the table has a
    move for an answer from `waiting_human`, and the question is not a ceiling's (which only an
    explicit approval settles)."""
    has_answer = ANSWER in table.transitions.get(WAITING_HUMAN, {})
    return bool(options) and has_answer and not needs_approval(kind, table)


def _listed(parts: list[str]) -> str:
    """The parts as "A, B, or C": the last one offered with "or"."""
    if len(parts) < 2:
        return "".join(parts)
    return ", ".join(parts[:-1]) + ", or " + parts[-1]


def ask(
    task: Task,
    room: RoomRef,
    policy: GroupPolicy,
    *,
    table: StateTable,
    kind: str,
    question: str,
    reason: str,
    options: tuple[str, ...] = (),
    show_reason: bool = True,
) -> EscalationDraft:
    """`table`: the task's protocol's, which says what each answer does (`wording`).
    `show_reason=False`: the reason is stored, not posted again (it was just posted, as the
    arbiter's ruling is)."""
    choices = offers_choices(kind, options, table)
    words = wording(table, kind=kind, choices=choices)

    def post(escalation_id: int) -> OutboxDraft:
        lines = [f"❓ Task #{task.id} needs a decision: {question}"]
        if reason and show_reason:
            lines.append(f"Why: {reason}")
        if options:
            lines.append("Options:")
            lines += [f"{n}. {option}" for n, option in enumerate(options, 1)]
        lines.append(f"{words.instruction} {_who(policy)}")
        value = str(escalation_id)
        if choices:  # a choice: one button per option; Approve would say nothing of which
            first: tuple[Action, ...] = choice_actions(escalation_id, options)
        else:
            first = (Action("approve", "Approve", value, "primary"),)
        return OutboxDraft(
            key=card_key(escalation_id),
            room=room,
            text="\n".join(lines),
            card=escalation_card(task.id, question, reason, options, words.footer, _who(policy)),
            actions=(*first, Action("reject", "Reject", value, "danger")),
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
    table: StateTable,
    user: str,
    kind: Answer,
    text: str = "",
    event_id: str | None = None,
    option: int = 0,
) -> Task | None:
    """Apply an approver's answer; None when it lost a race (the caller re-reads and retries).
    `table`: the task's protocol's, whose words the reply uses. `kind="choose"`: `option` is
    the chosen option's number and `text` its stored words, which the owner's prompt carries."""
    words = wording(table, choices=kind == "choose")
    comment = f" ({text})" if text and kind not in ("answer", "choose") else ""
    stored = kind if kind in ("approve", "reject") else text
    if kind == "choose":
        event, said = ANSWER, f'chose option {option} of "{escalation.question}": {text}'
        stored = recorded(option, text)
    elif kind == "reject":
        event, said = REJECT, f"rejected: {escalation.question}{comment}"
    elif kind == "approve":
        event, said = APPROVE, f"approved: {escalation.question}{comment}"
    else:
        event, said = ANSWER, text
    reply = words.reply(kind, user, task.id)
    applied = await ctx.store.apply(
        Change(
            task.id,
            ctx.now(),
            expect_version=task.version,
            event=event,
            event_id=event_id,
            answer=AnswerDraft(escalation.id, stored, user),
            message=MessageDraft(user, said, kind="answer", event_id=event_id),
            rounds="reset",
            grant=escalation.kind == CEILING and kind == "approve",  # only explicitly
            outbox=[
                OutboxDraft(
                    f"answer:{escalation.id}",
                    room,
                    reply,
                    card=decided_card(
                        escalation,
                        user=user,
                        kind=kind,
                        text=recorded(option, text) if kind == "choose" else text,
                        at=ctx.now(),
                    ),
                )
            ],
        )
    )
    if applied is not None:
        await complete_records(ctx, task.id)  # the answer: who, what, when
    return applied


def card_key(escalation_id: int | str) -> str:
    """The outbox key of an escalation's card (its question with the answer buttons)."""
    return f"escalation:{escalation_id}"


def stale_reply(escalation_id: str) -> str:
    return (
        f"That question (escalation #{escalation_id}) is stale: it was already answered or the "
        "task has moved on. Nothing was changed."
    )
