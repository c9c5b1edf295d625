"""Inbound messages and button clicks (DESIGN §3 "Humans", §7).

Dropped: bot messages (only humans open tasks, so bots cannot loop each other), rooms of no
group, and event ids seen before (the event is recorded in the same transaction as its effect).
A mention in a room without an open task opens one, within the group's caps on open tasks
(rooms/base/open_caps.py: past one, a private answer and no task). Commands are the first word after
the mention: `stop` and `status` (alone), `approve` and `reject` (answer the open escalation; with
no open question and more text, the message is treated as ordinary text), `choose N` (pick option
N of the open escalation, as its button does: rooms/core/choices.py), `arbitrate [now] [what to
look at]` (anyone in the room calls the arbiter: rooms.pair.summons), `dashboard` (alone: an
approver gets a one-time sign-in link to the dashboard, privately: rooms.base.ports.SignInLinks).
Anything else in a room with
an open task is a human message for the next prompt; while the task waits for a person, an
approver's message is the answer and anyone else gets a clear refusal. At a ceiling only an explicit
approval grants another budget: an approver's message there is kept on the task as a note and the
task keeps waiting (rooms/core/escalations.py `needs_approval`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from rooms.base.machine import DEFAULT_PROTOCOL
from rooms.base.model import GroupPolicy, Inbound, Summon, Task
from rooms.base.open_caps import CapReached
from rooms.base.records import Change, Escalation, MessageDraft, OutboxDraft
from rooms.base.words import CHOOSE, STOP, WAITING_HUMAN
from rooms.core.choices import chosen, out_of_range, parse_choice, parse_number
from rooms.core.context import Ctx
from rooms.core.decisions import complete_records
from rooms.core.escalations import (
    Answer,
    answer,
    may_answer,
    needs_approval,
    noted_reply,
    refusal,
    stale_reply,
)
from rooms.core.protocol import Protocol
from rooms.core.registry import (
    COMMANDS as COMMANDS,  # defined beside the registry, which refuses them
)
from rooms.core.registry import by_command, protocol_for, specs
from rooms.core.status import status_text
from rooms.core.summons import acknowledgement, not_summonable
from rooms.judge.quoting import inline_quote
from rooms.pair.prompting import HUMAN_TEXT_LIMIT

_MENTION = re.compile(r"^\s*(?:<@[^>]*>|@\S+)[\s,:]*")
_RETRIES = 5  # compare-and-swap losses against a busy driver or another engine


def help_text(policy: GroupPolicy) -> str:
    """The chat's help: the commands, and the protocols' command words from the registry."""
    openers = ", ".join(f"`{s.opening}`" for s in specs() if s.command)
    deliberations = f" {openers} open a deliberation." if openers else ""
    return (
        f"{_capital(policy.how_to('a task'))} to start one. In a room with a task: `stop` closes "
        "it, `status` shows where it is, `approve` / `reject` answer an open question, `choose N` "
        "picks its option N, `dashboard` sends an approver a sign-in link to the dashboard, "
        "`arbitrate [what to look at]` calls the arbiter once the running turn ends (`arbitrate "
        "now` stops that turn); anything else you write reaches the agents' next turn."
        + deliberations
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


_NOW = "now"

Cancel = Callable[[int, str], None]


def parse(text: str) -> tuple[str | None, str, str]:
    """(command or None, the text after the command, the whole text without the mention)."""
    rest = text
    while (stripped := _MENTION.sub("", rest, count=1)) != rest:
        rest = stripped
    rest = rest.strip()
    first, _, after = rest.partition(" ")
    word = first.lstrip("/").rstrip(".,:;!?").lower()
    if word in COMMANDS:
        return word, after.strip(), rest
    return None, "", rest


def arbitrate_args(after: str) -> tuple[bool, str]:
    """(`now` given, the note): `arbitrate now: look at the migration` → (True, "look at …")."""
    first, _, rest = after.partition(" ")
    if first.rstrip(".,:;!?—-").lower() == _NOW and first.lower().startswith(_NOW):
        return True, rest.strip().lstrip(":—-").strip()
    return False, after.strip()


async def handle(ctx: Ctx, inbound: Inbound, cancel: Cancel) -> None:
    if inbound.from_bot:
        return
    policy = ctx.policies.for_room(inbound.room)
    if policy is None:
        return
    if inbound.event_id and await ctx.store.seen_event(inbound.event_id):
        return
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
    await _reply(ctx, inbound, policy, "Busy right now: please try again in a moment.")


async def _message(ctx: Ctx, inbound: Inbound, policy: GroupPolicy, cancel: Cancel) -> bool:
    """One attempt; False when it lost a race and should be tried again on fresh state."""
    store, room, user = ctx.store, inbound.room, inbound.user
    if inbound.mentions_bot:
        command, after, whole = parse(inbound.text)
    else:
        command, after, whole = None, "", inbound.text.strip()
    task = await store.open_task_in(room)
    escalation = await store.open_escalation(task.id) if task else None
    if command in ("stop", "status", "help", "dashboard") and after:
        command = None  # "stop the server crashing" is a task or a message, not a command
    if command in ("approve", "reject", CHOOSE) and escalation is None and after:
        command = None
    rest = after if command else whole

    if command == "help":
        return await _reply(ctx, inbound, policy, help_text(policy))
    if command == "dashboard":
        return await _reply(
            ctx, inbound, policy, await sign_in_reply(ctx, inbound, policy), private=True
        )
    if command == "status":
        return await _reply(ctx, inbound, policy, await status_text(ctx, room))
    if command == "arbitrate":
        return await _arbitrate(ctx, inbound, policy, task, escalation, after)
    if command == "stop":
        if task is None:
            return await _reply(ctx, inbound, policy, "There is no open task to stop here.")
        if not may_stop(policy, task, user, inbound.roles):
            text = f"Only an approver or the person who opened task #{task.id} can stop it."
            return await _reply(ctx, inbound, policy, text, private=True)
        return await _stop(ctx, inbound, task, cancel)
    if command == CHOOSE:
        if task is None or escalation is None or task.status != WAITING_HUMAN:
            return await _reply(ctx, inbound, policy, "There is no open question to answer here.")
        if not may_answer(policy, user, inbound.roles):
            return await _reply(ctx, inbound, policy, refusal(policy, user), private=True)
        number = parse_number(after)
        if number is None:
            text = f"{user}: write `choose` and the option's number, e.g. `choose 1`."
            return await _reply(ctx, inbound, policy, text, private=True)
        return await _choose(ctx, inbound, policy, task, escalation, number)
    if command in ("approve", "reject"):
        if task is None or escalation is None or task.status != WAITING_HUMAN:
            return await _reply(ctx, inbound, policy, "There is no open question to answer here.")
        if not may_answer(policy, user, inbound.roles):
            return await _reply(ctx, inbound, policy, refusal(policy, user), private=True)
        kind: Answer = "approve" if command == "approve" else "reject"
        applied = await answer(
            ctx,
            task,
            escalation,
            room,
            table=protocol_for(task.protocol).table,
            user=user,
            kind=kind,
            text=rest,
            event_id=inbound.event_id or None,
        )
        if applied is not None and kind == "approve":
            ctx.spawn(task.id)
        return applied is not None

    if task is None:
        if not inbound.mentions_bot:
            return True  # chatter in a room without a task is not for us
        if not rest:
            return await _reply(ctx, inbound, policy, help_text(policy))
        protocol, text = _kind(rest)
        if not text:
            return await _reply(ctx, inbound, policy, help_text(policy))
        return await _open(ctx, inbound, policy, text, protocol)
    if task.status == WAITING_HUMAN and escalation is not None:
        if not may_answer(policy, user, inbound.roles):
            return await _reply(ctx, inbound, policy, refusal(policy, user), private=True)
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
    chosen = by_command(first.lstrip("/").rstrip(".,:;!?").lower())
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
        return await _reply(ctx, inbound, policy, str(refused), private=True)
    if task is None:
        return False  # another message opened a task first (or this event was handled)
    ctx.spawn(task.id)
    return True


async def _arbitrate(
    ctx: Ctx,
    inbound: Inbound,
    policy: GroupPolicy,
    task: Task | None,
    escalation: Escalation | None,
    after: str,
) -> bool:
    why = not_summonable(task, protocol_for(task.protocol) if task else None, escalation)
    if why is not None:
        return await _reply(ctx, inbound, policy, why)
    assert task is not None
    now, note = arbitrate_args(after)
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


def _cut_note(text: str) -> str:
    """Say so when the agents will not see the whole task (rooms/pair/prompting.py)."""
    if len(text.strip()) <= HUMAN_TEXT_LIMIT:
        return ""
    return (
        f"\n⚠️ The task is {len(text.strip()):,} characters long: the agents are given its first "
        f"{HUMAN_TEXT_LIMIT:,} (the whole text is stored). Put what matters first, or attach "
        "long logs to the workspace instead."
    )


async def sign_in_reply(ctx: Ctx, inbound: Inbound, policy: GroupPolicy) -> str:
    """`dashboard`: a one-time link to the operator's dashboard, for an approver of the group
    only (signed in as them, the group's approver rules decide what they may answer there)."""
    if ctx.sign_in is None:
        return "The dashboard is not switched on for this Tribunal ([dashboard] port)."
    if not may_answer(policy, inbound.user, inbound.roles):
        only = "Only an approver of this group can sign in to the dashboard from here."
        return f"{only} {_who_may(policy)}".strip()
    link = await ctx.sign_in.link_for(inbound.room, inbound.user, inbound.roles)
    if link is None:
        return (
            "I cannot send a sign-in link to you alone on this platform, and a link shown to "
            "everyone here could be used by anyone: ask the operator for the dashboard's token."
        )
    return (
        f"Your sign-in link to the dashboard (for you only, valid once, for a short time): {link}"
    )


def _who_may(policy: GroupPolicy) -> str:
    return "Approvers: " + ", ".join(sorted(policy.approvers)) + "." if policy.approvers else ""


def may_stop(policy: GroupPolicy, task: Task, user: str, roles: frozenset[str]) -> bool:
    """Stopping throws the pair's work away: an approver of the group or the task's opener."""
    return may_answer(policy, user, roles) or task.opened_by == user


async def stop_task(ctx: Ctx, inbound: Inbound, task: Task, cancel: Cancel) -> bool:
    """Close `task` as `inbound.user` asked, once whoever called this has checked they may (the
    chat's `stop` checks `may_stop`; the dashboard lets its operator stop any task). False when
    the task moved meanwhile."""
    return await _stop(ctx, inbound, task, cancel)


async def _stop(ctx: Ctx, inbound: Inbound, task: Task, cancel: Cancel) -> bool:
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


async def _reply(
    ctx: Ctx, inbound: Inbound, policy: GroupPolicy, text: str, *, private: bool = False
) -> bool:
    """Answer the person in the room; `private`: for their eyes only where the platform can."""
    key = f"event:{inbound.event_id}" if inbound.event_id else f"reply:{uuid.uuid4().hex}"
    draft = OutboxDraft(
        key=key,
        room=inbound.room,
        text=text,
        private_to=inbound.user if private else None,
        in_reply_to=inbound.event_id or None,
    )
    await ctx.store.enqueue(
        [draft], ctx.now(), group=policy.name, event_id=inbound.event_id or None
    )
    return True  # a reply for an event seen before is dropped with it: nothing to retry


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
    if inbound.action not in ("approve", "reject", CHOOSE):
        return await _reply(ctx, inbound, policy, unknown_action(inbound.action), private=True)
    if not may_answer(policy, user, inbound.roles):
        return await _reply(ctx, inbound, policy, refusal(policy, user), private=True)
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
        return await _reply(ctx, inbound, policy, stale_reply(value), private=True)
    if inbound.action == CHOOSE:
        return await _choose(ctx, inbound, policy, task, escalation, option)
    kind: Answer = "approve" if inbound.action == "approve" else "reject"
    applied = await answer(
        ctx,
        task,
        escalation,
        inbound.room,
        table=protocol_for(task.protocol).table,
        user=user,
        kind=kind,
        event_id=inbound.event_id or None,
    )
    if applied is not None and kind == "approve":
        ctx.spawn(task.id)
    return applied is not None


async def _choose(
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
        return await _reply(ctx, inbound, policy, why, private=True)
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
