"""What `status` prints for a room."""

from __future__ import annotations

from rooms.base.machine import DEFAULT_PROTOCOL, UnknownProtocol
from rooms.base.model import GroupPolicy, RoomRef, Task, Turn
from rooms.base.words import APPROVED, ARBITER, OWNER, REVIEWER
from rooms.core.context import Ctx
from rooms.core.escalations import needs_approval, offers_choices
from rooms.core.ledger import ledger_summary, outcome_line, summary_line
from rooms.core.protocol import Step
from rooms.core.registry import protocol_for
from rooms.judge.ceilings import duration_words
from rooms.judge.positions import FIRST_READING
from rooms.judge.quoting import inline_quote, one_line
from rooms.judge.turn_objects import TEXT
from rooms.references.render import status_lines
from rooms.work.worktrees import branch_head


async def status_text(ctx: Ctx, room: RoomRef) -> str:
    store = ctx.store
    task = await store.open_task_in(room)
    policy = ctx.policies.for_room(room)
    start = f"{(policy or GroupPolicy(name='')).how_to('a task').capitalize()} to start one."
    if task is None:
        last = await store.latest_task_in(room)
        if last is None:
            return "\n".join([f"No open task in this room. {start}", *_engine_notes(ctx)])
        summary = await _closed_summary(ctx, last, policy)
        return "\n".join(
            [f"No open task in this room. The last one, #{last.id}, is closed.", *summary]
            + [start, *_engine_notes(ctx)]
        )
    limit = policy.thresholds.max_arbitrations if policy else "?"
    first_line = task.text.strip().splitlines()[0] if task.text.strip() else ""
    turns = await store.turns(task.id)
    lines = [
        f"Task #{task.id}: {_label(task.protocol, task.status)}",
        f"Task: {inline_quote(first_line, 120)}",
    ]
    if task.protocol == DEFAULT_PROTOCOL:
        lines.append(
            f"Rounds since the last human message or ruling: {task.rounds} · turns: {task.turns}"
            f" · arbitrations: {task.arbitrations}/{limit} · tokens: {task.tokens:,}"
            f" · cost: ${task.cost_usd:.2f}"
        )
        if policy is not None:
            lines.append(swap_line(policy, turns, await store.turn_costs(task.id)))
            lines += await ledger_lines(ctx, task)
    else:  # a deliberation protocol: its phase is the label above; who took part, at what cost
        who = list(
            dict.fromkeys(t.role for t in turns if t.status in ("done", "failed", "running"))
        )
        lines.append(
            f"Protocol: {task.protocol} · turns: {task.turns} · tokens: {task.tokens:,}"
            f" · cost: ${task.cost_usd:.2f}"
        )
        lines.append("Participants: " + (", ".join(who) if who else "none yet"))
    running = [t for t in turns if t.status == "running"]
    if len(running) == 1:
        lines.append(f"Now: the {running[-1].role} is working on turn {running[-1].seq}.")
    elif running:  # a phase that runs several actors at once
        at_once = ", ".join(f"{t.role} (turn {t.seq})" for t in running)
        lines.append(f"Now working at once: {at_once}.")
    if task.summon is not None:
        when = "at once" if task.summon.now else "when the running turn ends"
        lines.append(f"Arbiter called by {one_line(task.summon.by)}: it rules {when}.")
    counted = markers_line(turns)
    if counted:
        lines.append(counted)
    escalation = await store.open_escalation(task.id)
    if escalation is not None:
        table = protocol_for(task.protocol).table
        if needs_approval(escalation.kind, table):
            how = "approve to grant another budget, or reject; a reply is kept as a note"
        elif offers_choices(escalation.kind, escalation.options, table):
            how = f"choose 1–{len(escalation.options)}, reject or reply with an answer"
        else:
            how = "approve, reject or reply with an answer"
        lines.append(
            f"Waiting for a person: {inline_quote(escalation.question)} "
            f"(escalation #{escalation.id}; {how})"
        )
    firings = [f for f in await store.firings(task.id) if f.acted]
    if firings:
        last_firing = firings[-1].firing
        reason = one_line(last_firing.reason)  # its agent words are quoted by the detector
        lines.append(f"Last deadlock detector: {last_firing.detector}: {reason}")
    panel = status_lines(await store.latest_panel(task.id))  # its errors are a server's words
    lines += [line[: len(line) - len(line.lstrip())] + one_line(line) for line in panel]
    return "\n".join(lines + _engine_notes(ctx))


def _engine_notes(ctx: Ctx) -> list[str]:
    """The runner's word on its container engines: a drained one is named (a backend on several
    engines, container/engine_set.py, forwarded by its wrappers); nothing for any other."""
    notes = getattr(ctx.runner, "engine_notes", None)
    return [one_line(str(n)) for n in notes()] if callable(notes) else []


async def ledger_lines(ctx: Ctx, task: Task) -> list[str]:
    """This task's rulings in the outcome ledger, and the group's record so far."""
    mine = await ctx.store.outcomes(task_id=task.id)
    lines = [f"Ruling {i}: {outcome_line(o)}" for i, o in enumerate(mine, 1)]
    group = await ledger_summary(ctx.store, group=task.group)
    return [*lines, summary_line(group.overall)]


def swap_line(policy: GroupPolicy, turns: list[Turn], costs: dict[int, float]) -> str:
    """The swap check's cost so far: its extra readings (the first readings it asked again
    after) and what they cost; both count in the task's cost and toward its ceilings."""
    if not policy.swap_check:
        return "Swap check: off for this group (arbiter.swap_check = false)."
    extra = [t for t in turns if t.role == ARBITER and t.error == FIRST_READING]
    cost = sum(costs.get(t.id, 0.0) for t in extra)
    readings = f"{len(extra)} extra reading" + ("" if len(extra) == 1 else "s")
    return f"Swap check: on · {readings} · ${cost:.2f} (in the cost above and its ceiling)"


def _label(protocol: str, status: str) -> str:
    try:
        return protocol_for(protocol).label(status)
    except UnknownProtocol:  # a kind of task this process does not run: say what is stored
        return f"{status} ({protocol})"


async def _closed_summary(ctx: Ctx, task: Task, policy: GroupPolicy | None) -> list[str]:
    """How a closed task ended: its outcome, how long it ran, branch and commit, turns, tokens
    and cost."""
    lines = [f"Outcome: {await _outcome(ctx, task)}."]
    if task.closed_at is not None:
        lines.append(f"It ran for {duration_words(max(task.closed_at - task.created_at, 0.0))}.")
    head = await branch_head(policy, task, ctx.store) if policy is not None else None
    if head is not None:
        lines.append(f"Branch `{head[0]}` at {head[1][:12]}.")
    lines.append(f"Turns: {task.turns} · tokens: {task.tokens:,} · cost: ${task.cost_usd:.2f}.")
    counted = markers_line(await ctx.store.turns(task.id))
    if counted:
        lines.append(counted)
    mine = await ctx.store.outcomes(task_id=task.id)
    lines += [f"Ruling {i}: {outcome_line(o)}" for i, o in enumerate(mine, 1)]
    return lines


def markers_line(turns: list[Turn]) -> str | None:
    """Where the owner's and reviewer's markers were read from and how many were in doubt
    (rooms/judge/turn_objects.py), so a text fallback or a doubtful reading is counted where
    people look; None when no turn has a reading yet (deliberation protocols, old turns)."""
    read = [t for t in turns if t.status == "done" and t.marker_source is not None]
    if not read:
        return None
    text = sum(t.marker_source == TEXT for t in read)
    line = f"Markers: {text} read from text, {len(read) - text} from objects"
    doubts = [t.marker_doubt for t in read if t.marker_doubt]
    if doubts:
        kinds = ", ".join(
            f"{kind} ×{doubts.count(kind)}" if doubts.count(kind) > 1 else kind
            for kind in dict.fromkeys(doubts)
        )
        line += f" · {len(doubts)} in doubt ({kinds})"
    return line


async def _outcome(ctx: Ctx, task: Task) -> str:
    """What ended the task, from what the store holds: an approval and wrap-up (the pair), a
    person's answer, a stop, or the protocol's own conclusion (its last turn done, then closed)."""
    turns = await ctx.store.turns(task.id)
    done = [t for t in turns if t.status == "done"]
    if task.protocol == DEFAULT_PROTOCOL and _approved_and_wrapped_up(done):
        return "done: approved and wrapped up"
    escalations = await ctx.store.escalations(task.id)
    last = escalations[-1] if escalations else None
    after_turns = last is not None and (not done or last.created_at >= (done[-1].ended_at or 0.0))
    if last is not None and after_turns and last.answered_by:
        return f"closed after {one_line(last.answered_by)} answered: {inline_quote(last.question)}"
    if task.protocol == DEFAULT_PROTOCOL:
        return "closed before an approval"
    failure = await _failure(ctx, task)
    if failure:
        return f"the {task.protocol} stopped: {one_line(failure)}"
    if after_turns or (turns and turns[-1].status != "done"):
        return f"the {task.protocol} was stopped before it concluded"
    return f"the {task.protocol} concluded; its record is posted in the room"


async def _failure(ctx: Ctx, task: Task) -> str:
    """Why a deliberation protocol stopped before it concluded ("" when it did not): its
    machine's state replayed from the stored turns, as its driver saw it. A failed run ends the
    task like a conclusion does, so only the state tells the two apart."""
    try:
        protocol = protocol_for(task.protocol)
    except UnknownProtocol:
        return ""
    replay = getattr(protocol, "replay", None)
    room = await ctx.store.room(task.room)
    policy = ctx.policies.for_room(room) if room is not None else None
    if replay is None or room is None or policy is None:
        return ""
    history = await ctx.store.history(task.id)
    step = Step(task, room, policy, history, policy.thresholds, ctx.now(), owner="")
    failure = getattr(replay(step).state, "failure", "")
    return failure if isinstance(failure, str) else ""


def _approved_and_wrapped_up(done: list[Turn]) -> bool:
    return (
        len(done) >= 2
        and done[-1].role == OWNER
        and done[-2].role == REVIEWER
        and done[-2].marker == APPROVED
    )
