"""What each command of the command table does once it may run (rooms/core/command_table.py
checks first that its task or question is there and that the person may give it).

Every handler returns False only when it lost a race (a compare-and-swap against the driver or
another engine) and should be tried again on fresh state; a reply, a refusal or an applied change
is True.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from rooms.base.model import GroupPolicy, Inbound, Summon, Task
from rooms.base.records import Change, Escalation, OutboxDraft
from rooms.base.words import APPROVE, STOP
from rooms.core.choices import chosen, out_of_range, parse_number
from rooms.core.context import Ctx
from rooms.core.decisions import complete_records
from rooms.core.escalations import Answer, answer, may_answer, offers_choices
from rooms.core.registry import protocol_for
from rooms.core.replies import reply
from rooms.core.status import status_text
from rooms.core.summons import acknowledgement, not_summonable

Cancel = Callable[[int, str], None]  # stop the task's running turn here, with a reason
_NOW = "now"


@dataclass(frozen=True)
class Asked:
    """A command as a person gave it: the word they used (`approve` or `reject` run the same
    row), the text after it, and the room's open task and question when it arrived."""

    ctx: Ctx
    inbound: Inbound
    policy: GroupPolicy
    word: str
    after: str
    task: Task | None
    escalation: Escalation | None
    cancel: Cancel


async def show_help(asked: Asked, text: str) -> bool:
    return await reply(asked.ctx, asked.inbound, asked.policy, text)


async def show_status(asked: Asked) -> bool:
    text = await status_text(asked.ctx, asked.inbound.room)
    return await reply(asked.ctx, asked.inbound, asked.policy, text)


async def stop(asked: Asked) -> bool:
    assert asked.task is not None  # the table checked it, and that the person may
    return await stop_task(asked.ctx, asked.inbound, asked.task, asked.cancel)


async def stop_task(ctx: Ctx, inbound: Inbound, task: Task, cancel: Cancel) -> bool:
    """Close `task` as `inbound.user` asked, once whoever called this has checked they may (the
    chat's `stop` row checks `may_stop`; the dashboard lets its operator stop any task). False
    when the task moved meanwhile."""
    reason = f"stopped by {inbound.user}"
    closed = await ctx.store.apply(
        Change(
            task.id,
            ctx.now(),
            expect_version=task.version,
            event=STOP,
            event_id=inbound.event_id or None,
            outbox=[
                OutboxDraft(
                    f"stop:{task.id}", inbound.room, f"⏹ Task #{task.id} {reason}. It is closed."
                )
            ],
        )
    )
    if closed is None:
        return False
    await complete_records(ctx, task.id)
    cancel(task.id, reason)  # a turn running here stops now; elsewhere its lease renewal fails
    return True


async def sign_in(asked: Asked) -> bool:
    """`dashboard`: a one-time link to the operator's dashboard, for an approver of the group
    only (signed in as them, the group's approver rules decide what they may answer there)."""
    ctx, inbound, policy = asked.ctx, asked.inbound, asked.policy
    return await reply(
        ctx, inbound, policy, await sign_in_reply(ctx, inbound, policy), private=True
    )


async def sign_in_reply(ctx: Ctx, inbound: Inbound, policy: GroupPolicy) -> str:
    if ctx.sign_in is None:
        return "The dashboard is not switched on for this Tribunal ([dashboard] port)."
    if not may_answer(policy, inbound.user, inbound.roles):
        only = "Only an approver of this group can sign in to the dashboard from here."
        who = "Approvers: " + ", ".join(sorted(policy.approvers)) + "." if policy.approvers else ""
        return f"{only} {who}".strip()
    link = await ctx.sign_in.link_for(inbound.room, inbound.user, inbound.roles)
    if link is None:
        return (
            "I cannot send a sign-in link to you alone on this platform, and a link shown to "
            "everyone here could be used by anyone: ask the operator for the dashboard's token."
        )
    return (
        f"Your sign-in link to the dashboard (for you only, valid once, for a short time): {link}"
    )


def options_refusal(user: str, escalation: Escalation) -> str:
    """`approve` names no option: on a question that offers some it would let the owner go on
    without a choice, so it is refused (when in doubt, nothing proceeds)."""
    count = len(escalation.options)
    return (
        f"{user}: question #{escalation.id} offers {count} options, and `approve` picks none of "
        f"them, so nothing was changed. Pick one with `choose N` (1–{count}) or its button, "
        "answer in your own words, or `reject`."
    )


async def approve_or_reject(asked: Asked) -> bool:
    ctx, task, escalation = asked.ctx, asked.task, asked.escalation
    assert task is not None and escalation is not None  # the table checked them
    table = protocol_for(task.protocol).table
    kind: Answer = "approve" if asked.word == APPROVE else "reject"
    if kind == "approve" and offers_choices(escalation.kind, escalation.options, table):
        text = options_refusal(asked.inbound.user, escalation)
        return await reply(ctx, asked.inbound, asked.policy, text, private=True)
    applied = await answer(
        ctx,
        task,
        escalation,
        asked.inbound.room,
        table=table,
        user=asked.inbound.user,
        kind=kind,
        text=asked.after,
        event_id=asked.inbound.event_id or None,
    )
    if applied is not None and kind == "approve":
        ctx.spawn(task.id)
    return applied is not None


async def choose_by_number(asked: Asked) -> bool:
    assert asked.task is not None and asked.escalation is not None  # the table checked them
    number = parse_number(asked.after)
    if number is None:
        text = f"{asked.inbound.user}: write `choose` and the option's number, e.g. `choose 1`."
        return await reply(asked.ctx, asked.inbound, asked.policy, text, private=True)
    return await choose(
        asked.ctx, asked.inbound, asked.policy, asked.task, asked.escalation, number
    )


async def choose(
    ctx: Ctx,
    inbound: Inbound,
    policy: GroupPolicy,
    task: Task,
    escalation: Escalation,
    option: int,
) -> bool:
    """An approver picked option `option` of the open `escalation` (a button or `choose N`):
    the owner is sent that option's stored text, never the button's label; a number the
    question does not offer changes nothing and is answered privately."""
    text = chosen(escalation.options, option)
    if text is None:
        why = out_of_range(inbound.user, escalation.id, option, len(escalation.options))
        return await reply(ctx, inbound, policy, why, private=True)
    applied = await answer(
        ctx,
        task,
        escalation,
        inbound.room,
        table=protocol_for(task.protocol).table,
        user=inbound.user,
        kind="choose",
        text=text,
        option=option,
        event_id=inbound.event_id or None,
    )
    if applied is not None:
        ctx.spawn(task.id)
    return applied is not None


def arbitrate_args(after: str) -> tuple[bool, str]:
    """(`now` given, the note): `arbitrate now: look at the migration` → (True, "look at …")."""
    first, _, rest = after.partition(" ")
    if first.rstrip(".,:;!?—-").lower() == _NOW and first.lower().startswith(_NOW):
        return True, rest.strip().lstrip(":—-").strip()
    return False, after.strip()


async def arbitrate(asked: Asked) -> bool:
    ctx, inbound, policy, task = asked.ctx, asked.inbound, asked.policy, asked.task
    protocol = protocol_for(task.protocol) if task else None
    why = not_summonable(task, protocol, asked.escalation)
    if why is not None:
        return await reply(ctx, inbound, policy, why)
    assert task is not None
    now, note = arbitrate_args(asked.after)
    summon = Summon(by=inbound.user, note=note, now=now, at=ctx.now())
    running = any(t.status == "running" for t in await ctx.store.turns(task.id))
    key = f"event:{inbound.event_id}" if inbound.event_id else f"summon:{uuid.uuid4().hex}"
    text = acknowledgement(task, policy, by=inbound.user, now=now, running=running)
    stored = await ctx.store.apply(
        Change(
            task.id,
            ctx.now(),
            event_id=inbound.event_id or None,
            summon=summon,
            outbox=[OutboxDraft(key, inbound.room, text, in_reply_to=inbound.event_id or None)],
        )
    )
    if stored is None:
        return False  # it moved, or someone else's summon won: re-read and say so
    if now:
        ctx.interrupt_turn(task.id, f"stopped by {inbound.user}: arbitrate now")
    ctx.spawn(task.id)  # a turn running elsewhere ends first; the driver then takes the summon
    return True
