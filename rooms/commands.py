"""Inbound messages and button clicks (DESIGN §3 "Humans", §7).

Dropped: bot messages (only humans open tasks, so bots cannot loop each other), rooms of no
group, and event ids seen before (the event is recorded in the same transaction as its effect).
A mention in a room without an open task opens one, within the group's caps on open tasks
(rooms/base/open_caps.py: past one, a private answer and no task). Commands are the first word after
the mention, and one table says what each does (rooms/core/command_table.py: its words, what must
be open, who may, its handler and help line); this module parses, dispatches through it, and
gives Approve and Reject buttons the same rows (a Choose button picks its option directly:
rooms/core/choices.py; `dashboard` sends an approver a one-time sign-in link, privately:
rooms.base.ports.SignInLinks). The console hands its "/" lines over the same way. Anything else in a
room with an open task is a human message for the next prompt; while the task waits for a
person, an approver's message is the answer and anyone else gets a clear refusal. At a ceiling
only an explicit approval grants another budget: an approver's message there is kept on the task
as a note and the task keeps waiting (rooms/core/escalations.py `needs_approval`).
"""

from __future__ import annotations

import re
import uuid

from rooms.base.machine import DEFAULT_PROTOCOL
from rooms.base.model import GroupPolicy, Inbound, Task
from rooms.base.open_caps import CapReached
from rooms.base.records import Change, MessageDraft, OutboxDraft
from rooms.base.words import APPROVE, CHOOSE, REJECT, WAITING_HUMAN
from rooms.core.choices import parse_choice
from rooms.core.command_handlers import Asked, Cancel, choose
from rooms.core.command_handlers import arbitrate_args as arbitrate_args  # its home before
from rooms.core.command_handlers import (
    stop_task as stop_task,  # the engine's stop for the dashboard
)
from rooms.core.command_table import help_text as help_text  # read by tests and the console
from rooms.core.command_table import lookup, parse, run, typed_word
from rooms.core.command_table import may_stop as may_stop  # the dashboard's rule for its Stop
from rooms.core.context import Ctx
from rooms.core.escalations import (
    answer,
    may_answer,
    needs_approval,
    noted_reply,
    refusal,
    stale_reply,
)
from rooms.core.protocol import Protocol
from rooms.core.registry import (
    COMMANDS as COMMANDS,  # the command words (rooms/base/words.py), which no protocol may take
)
from rooms.core.registry import by_command, protocol_for
from rooms.core.replies import reply
from rooms.judge.quoting import inline_quote
from rooms.pair.prompting import HUMAN_TEXT_LIMIT

__all__ = [
    "COMMANDS",
    "arbitrate_args",
    "handle",
    "help_text",
    "may_stop",
    "parse",
    "stop_task",
    "unknown_action",
]

_RETRIES = 5  # compare-and-swap losses against a busy driver or another engine


async def handle(ctx: Ctx, inbound: Inbound, cancel: Cancel) -> None:
    if inbound.from_bot:
        return
    policy = ctx.policies.for_room(inbound.room)
    if policy is None:
        return
    # No read of the event id first: every write below records it in its own transaction and
    # writes nothing for an id seen before (a replay then costs a lost race and the read after
    # it); a first delivery, the common case, saves that round trip to the store.
    for _ in range(_RETRIES):
        if inbound.action is not None:
            done = await _click(ctx, inbound, policy)
        else:
            done = await _message(ctx, inbound, policy, cancel)
        if done:
            ctx.wake_outbox()
            return
        if inbound.event_id and await ctx.store.seen_event(inbound.event_id):
            return  # a concurrent delivery of the same event won
    await reply(ctx, inbound, policy, "Busy right now: please try again in a moment.")


async def _message(ctx: Ctx, inbound: Inbound, policy: GroupPolicy, cancel: Cancel) -> bool:
    """One attempt; False when it lost a race and should be tried again on fresh state."""
    store, room, user = ctx.store, inbound.room, inbound.user
    if inbound.mentions_bot:
        word, after, whole = parse(inbound.text)
    else:
        word, after, whole = None, "", inbound.text.strip()
    task = await store.open_task_in(room)
    escalation = await store.open_escalation(task.id) if task else None
    command = lookup(word) if word else None
    if command is not None and word is not None and command.applies(after, escalation is not None):
        asked = Asked(ctx, inbound, policy, word, after, task, escalation, cancel)
        return await run(command, asked)
    rest = whole

    if task is None:
        if not inbound.mentions_bot:
            return True  # chatter in a room without a task is not for us
        if not rest:
            return await reply(ctx, inbound, policy, help_text(policy))
        protocol, text = _kind(rest)
        if not text:
            return await reply(ctx, inbound, policy, help_text(policy))
        return await _open(ctx, inbound, policy, text, protocol)
    if task.status == WAITING_HUMAN and escalation is not None:
        if not may_answer(policy, user, inbound.roles):
            return await reply(ctx, inbound, policy, refusal(policy, user), private=True)
        table = protocol_for(task.protocol).table
        if needs_approval(escalation.kind, table):
            return await _note(ctx, inbound, task, rest)
        applied = await answer(
            ctx,
            task,
            escalation,
            room,
            table=table,
            user=user,
            kind="answer",
            text=rest,
            event_id=inbound.event_id or None,
        )
        if applied is not None:
            ctx.spawn(task.id)
        return applied is not None
    # A human message: stored on the task, read by the next prompt, restarts the round count.
    changed = await store.apply(
        Change(
            task.id,
            ctx.now(),
            event_id=inbound.event_id or None,
            message=MessageDraft(user, rest, event_id=inbound.event_id or None),
            rounds="reset",
        )
    )
    return changed is not None


async def _note(ctx: Ctx, inbound: Inbound, task: Task, text: str) -> bool:
    """An approver's message at a ceiling: added to the task for the next prompt, the task keeps
    waiting (no budget granted), and the room is told how to grant one."""
    key = f"event:{inbound.event_id}" if inbound.event_id else f"note:{uuid.uuid4().hex}"
    changed = await ctx.store.apply(
        Change(
            task.id,
            ctx.now(),
            expect_version=task.version,
            event_id=inbound.event_id or None,
            message=MessageDraft(inbound.user, text, event_id=inbound.event_id or None),
            outbox=[
                OutboxDraft(
                    key,
                    inbound.room,
                    noted_reply(inbound.user, task.id),
                    in_reply_to=inbound.event_id or None,
                )
            ],
        )
    )
    return changed is not None


def _kind(text: str) -> tuple[Protocol, str]:
    """The protocol a new task runs: the one whose command word starts the text (`arena …`),
    else the default pair; and the task's text without that word."""
    first, _, after = text.partition(" ")
    chosen = by_command(typed_word(first))
    if chosen is None:
        return protocol_for(DEFAULT_PROTOCOL), text
    return chosen, after.strip()


async def _open(ctx: Ctx, inbound: Inbound, policy: GroupPolicy, text: str, kind: Protocol) -> bool:
    key = f"event:{inbound.event_id}" if inbound.event_id else f"open:{uuid.uuid4().hex}"
    ack = OutboxDraft(
        key=key, room=inbound.room, text=kind.opened_text(inbound.user, policy) + _cut_note(text)
    )
    try:
        task = await ctx.store.open_task(
            inbound.room,
            policy.name,
            text,
            inbound.user,
            ctx.now(),
            event_id=inbound.event_id or None,
            outbox=[ack],
            protocol=kind.name,
            caps=policy.open_caps,
        )
    except CapReached as refused:
        return await reply(ctx, inbound, policy, str(refused), private=True)
    if task is None:
        return False  # another message opened a task first (or this event was handled)
    ctx.spawn(task.id)
    return True


def _cut_note(text: str) -> str:
    """Say so when the agents will not see the whole task (rooms/pair/prompting.py)."""
    if len(text.strip()) <= HUMAN_TEXT_LIMIT:
        return ""
    return (
        f"\n⚠️ The task is {len(text.strip()):,} characters long: the agents are given its first "
        f"{HUMAN_TEXT_LIMIT:,} (the whole text is stored). Put what matters first, or attach "
        "long logs to the workspace instead."
    )


_ESCALATION_ID = re.compile(r"[0-9]{1,18}")


def unknown_action(action: str | None) -> str:
    """The private answer to a click on a button this Tribunal does not know (an older card's,
    a forged payload's): nothing changed, and how to answer instead."""
    shown = inline_quote(action or "", 40)
    return (
        f"That button ({shown}) is not one I know, so nothing was changed. Use a button on the "
        "question's latest card, or reply `approve` / `reject` / `choose N` in the thread."
    )


async def _click(ctx: Ctx, inbound: Inbound, policy: GroupPolicy) -> bool:
    store, user = ctx.store, inbound.user
    value = inbound.action_value or ""
    if inbound.action not in (APPROVE, REJECT, CHOOSE):
        return await reply(ctx, inbound, policy, unknown_action(inbound.action), private=True)
    if not may_answer(policy, user, inbound.roles):
        return await reply(ctx, inbound, policy, refusal(policy, user), private=True)
    # A button's value is an escalation id we wrote (with the option's number, for a choice);
    # anything else (a tampered payload) is stale.
    option = 0
    if inbound.action == CHOOSE:
        parsed = parse_choice(value)
        wanted, option = parsed if parsed else (None, 0)
    else:
        wanted = int(value) if _ESCALATION_ID.fullmatch(value) else None
    escalation = await store.escalation(wanted) if wanted is not None else None
    task = await store.task(escalation.task_id) if escalation else None
    if (
        escalation is None
        or task is None
        or escalation.status != "open"
        or task.status != WAITING_HUMAN
        or task.room != inbound.room.key
    ):
        return await reply(ctx, inbound, policy, stale_reply(value), private=True)
    if inbound.action == CHOOSE:
        return await choose(ctx, inbound, policy, task, escalation, option)
    # Approve and Reject are the table's commands, given by a button: the same row runs
    # (a card posted before options existed cannot approve a question that offers some).
    command = lookup(inbound.action)
    assert command is not None
    return await run(
        command, Asked(ctx, inbound, policy, inbound.action, "", task, escalation, _no_cancel)
    )


def _no_cancel(task_id: int, reason: str) -> None:
    """A click stops nothing (Stop is a command, not a button)."""
