"""What `status` prints for a room."""

from __future__ import annotations

from rooms.context import Ctx
from rooms.model import GroupPolicy, RoomRef, Task
from rooms.protocols import DEFAULT, UnknownProtocol, protocol_for
from rooms.references.render import status_lines
from rooms.worktrees import branch_head


async def status_text(ctx: Ctx, room: RoomRef) -> str:
    store = ctx.store
    task = await store.open_task_in(room)
    policy = ctx.policies.for_room(room)
    start = f"{(policy or GroupPolicy(name='')).how_to('a task').capitalize()} to start one."
    if task is None:
        last = await store.latest_task_in(room)
        if last is None:
            return f"No open task in this room. {start}"
        summary = await _closed_summary(ctx, last, policy)
        return "\n".join(
            [f"No open task in this room. The last one, #{last.id}, is closed.", *summary] + [start]
        )
    limit = policy.thresholds.max_arbitrations if policy else "?"
    first_line = task.text.strip().splitlines()[0] if task.text.strip() else ""
    if len(first_line) > 120:
        first_line = first_line[:119] + "…"
    turns = await store.turns(task.id)
    lines = [f"Task #{task.id}: {_label(task.protocol, task.status)}", f"Task: {first_line}"]
    if task.protocol == DEFAULT:
        lines.append(
            f"Rounds since the last human message or ruling: {task.rounds} · turns: {task.turns}"
            f" · arbitrations: {task.arbitrations}/{limit} · tokens: {task.tokens:,}"
            f" · cost: ${task.cost_usd:.2f}"
        )
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
        lines.append(f"Arbiter called by {task.summon.by}: it rules {when}.")
    escalation = await store.open_escalation(task.id)
    if escalation is not None:
        lines.append(
            f"Waiting for a person: {escalation.question} (escalation #{escalation.id}; "
            "approve, reject or reply with an answer)"
        )
    firings = [f for f in await store.firings(task.id) if f.acted]
    if firings:
        last_firing = firings[-1].firing
        lines.append(f"Last deadlock detector: {last_firing.detector}: {last_firing.reason}")
    lines += status_lines(await store.latest_panel(task.id))
    return "\n".join(lines)


def _label(protocol: str, status: str) -> str:
    try:
        return protocol_for(protocol).label(status)
    except UnknownProtocol:  # a kind of task this process does not run: say what is stored
        return f"{status} ({protocol})"


async def _closed_summary(ctx: Ctx, task: Task, policy: GroupPolicy | None) -> list[str]:
    """How a closed task ended: its outcome, branch and commit, turns, tokens and cost."""
    done = [t for t in await ctx.store.turns(task.id) if t.status == "done"]
    approved = (
        len(done) >= 2
        and done[-1].role == "owner"
        and done[-2].role == "reviewer"
        and done[-2].marker == "APPROVED"
    )
    outcome = "done: approved and wrapped up" if approved else "closed before an approval"
    lines = [f"Outcome: {outcome}."]
    head = await branch_head(policy, task) if policy is not None else None
    if head is not None:
        lines.append(f"Branch `{head[0]}` at {head[1][:12]}.")
    lines.append(f"Turns: {task.turns} · tokens: {task.tokens:,} · cost: ${task.cost_usd:.2f}.")
    return lines
