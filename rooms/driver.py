"""The driver of one task: claim its lease, then run turns until a person must act or it closes.

One step = status → actor (rooms.pair.states.ACTOR) → prompt from the store → one run → one atomic
change (the turn's output, usage, firing, verdict, posts and the transition together). Lost races
never half-apply: a lost lease stops the turn, a lost compare-and-swap keeps the turn's output on
the turn (marked interrupted) and re-reads the task. On taking over a task, turns left running by
a dead engine are marked interrupted and run again.
"""

from __future__ import annotations

import asyncio
import logging

from prompts import load_prompt
from rooms import worktrees
from rooms.context import Ctx
from rooms.history import History, load
from rooms.judge.verdicts import RULING_SCHEMA
from rooms.model import GroupPolicy, RoomRef, Task, Turn
from rooms.pair.arbitration import after_arbiter_turn
from rooms.pair.outcomes import failure_change, post
from rooms.pair.prompting import build_prompt
from rooms.pair.rounds import after_finalize, after_work_turn
from rooms.pair.states import ACTOR
from rooms.records import Change
from rooms.turns import RunOutcome, build_spec, effective_thresholds, run_turn
from rooms.workspace import tree_hash
from runners.protocol import RunSpec

log = logging.getLogger(__name__)
CONFIG = "config"  # error code of a turn that could not be started (e.g. a bad prompt override)


async def drive(ctx: Ctx, task_id: int) -> None:
    while True:
        task = await ctx.store.task(task_id)
        if task is None or ACTOR[task.status] is None:
            return
        if await ctx.store.claim(task_id, ctx.engine_id, ctx.wall(), ctx.lease_s):
            break
        await asyncio.sleep(ctx.lease_poll_s)  # another engine drives it; watch for its end
    try:
        await _recover(ctx, task_id)
        while True:
            task = await ctx.store.task(task_id)
            if task is None or ACTOR[task.status] is None:
                return
            if not await ctx.store.claim(task_id, ctx.engine_id, ctx.wall(), ctx.lease_s):
                return  # taken over: the other engine drives it now
            room = await ctx.store.room(task.room)
            policy = ctx.policies.for_room(room) if room else None
            if room is None or policy is None:
                log.warning(
                    "task %s: room %s has no group any more; not driving", task.id, task.room
                )
                return
            try:
                policy = await worktrees.for_task(policy, task, ctx.data_dir)
            except worktrees.WorktreeError as exc:
                await ctx.store.apply(worktrees.refusal(task, room, str(exc), ctx.now()))
                ctx.wake_outbox()
                return
            await step(ctx, task, room, policy)
    finally:
        await asyncio.shield(ctx.store.release(task_id, ctx.engine_id))


async def _recover(ctx: Ctx, task_id: int) -> None:
    """We hold the lease, so a running turn belongs to an engine that died or gave up."""
    now = ctx.now()
    stale = await ctx.store.interrupt_turns(
        task_id, "interrupted: the engine running it stopped; it runs again", now
    )
    task = await ctx.store.task(task_id)
    room = await ctx.store.room(task.room) if task else None
    if not stale or room is None:
        return
    notes = [
        post(
            room,
            t,
            f"↻ The {t.role}'s turn {t.seq} was interrupted; running it again.",
            key="interrupted",
            persona="tribunal",
        )
        for t in stale
    ]
    await ctx.store.apply(Change(task_id, now, outbox=notes))
    ctx.wake_outbox()


async def step(ctx: Ctx, task: Task, room: RoomRef, policy: GroupPolicy) -> None:
    role = ACTOR[task.status]
    assert role is not None
    history = await load(ctx.store, task.id)
    resume = history.session_for(role)
    tree_before = await _approved_tree(history, policy) if task.status == "finalize" else None
    turn = await ctx.store.begin_turn(
        task,
        role,
        ctx.engine_id,
        ctx.now(),
        tree_before=tree_before,
        resumed_from=resume,
        wall=ctx.wall(),
    )
    if turn is None:
        return  # lost a race (version or lease); the driver re-reads the task
    run = RunOutcome()
    try:
        try:
            spec = await _spec(ctx, task, turn, policy, history, resume)
        except Exception as exc:
            run = RunOutcome(error_code=CONFIG, error=f"the turn could not be started: {exc}")
        else:
            run = await run_turn(ctx, task.id, spec, room, turn.seq)
        if run.lost_lease:
            await _keep(ctx, task, turn, run, "the task was closed or taken over while it ran")
            return
        change = await _decide(ctx, task, turn, run, room, policy, tree_before)
        if await ctx.store.apply(change) is None:
            await _keep(ctx, task, turn, run, "the task changed while the turn ran")
        ctx.wake_outbox()
    except asyncio.CancelledError:
        reason = ctx.stop_reasons.pop(task.id, "the engine stopped while it ran")
        await asyncio.shield(_keep(ctx, task, turn, run, reason))
        raise


async def _approved_tree(history: History, policy: GroupPolicy) -> str | None:
    """The workspace the reviewer approved: the wrap-up is compared with it, not with the
    workspace at the start of this attempt, so edits by a failed or interrupted wrap-up attempt
    still send the work back to review."""
    for turn in reversed(history.done):
        if turn.role == "reviewer" and turn.marker == "APPROVED":
            if turn.tree is not None:
                return turn.tree
            break
    return await tree_hash(policy.workspace)


async def _keep(ctx: Ctx, task: Task, turn: Turn, run: RunOutcome, reason: str) -> None:
    """Mark the turn interrupted, keeping whatever output it produced."""
    await ctx.store.interrupt_turns(
        task.id, f"interrupted: {reason}", ctx.now(), output=run.output, turn_id=turn.id
    )


async def _spec(
    ctx: Ctx, task: Task, turn: Turn, policy: GroupPolicy, history: History, resume: str | None
) -> RunSpec:
    cause = history.last_acted_firing()
    prompt = build_prompt(
        task,
        task.status,
        turn.role,
        history,
        policy,
        reason=cause.firing.reason if cause else "",
    )
    extras = await ctx.store.task_extras(task.id)
    limits = effective_thresholds(policy.thresholds, int(extras.get("grants", 0)))
    budget_left = max(limits.max_cost_usd - task.cost_usd, 0.01)
    return build_spec(
        task,
        turn,
        policy,
        prompt=prompt,
        system_prompt=load_prompt(turn.role, policy.prompt_overrides),
        resume=resume,
        output_schema=RULING_SCHEMA if turn.role == "arbiter" else None,
        budget_left_usd=budget_left,
    )


async def _decide(
    ctx: Ctx,
    task: Task,
    turn: Turn,
    run: RunOutcome,
    room: RoomRef,
    policy: GroupPolicy,
    tree_before: str | None,
) -> Change:
    now, owner = ctx.now(), ctx.engine_id
    if run.failed:
        extras = await ctx.store.task_extras(task.id)
        return failure_change(
            task,
            turn,
            run,
            room,
            policy,
            now=now,
            failures_before=int(extras.get("failures", 0)),
            owner=owner,
        )
    # Read the history again: human messages may have arrived while the turn ran.
    history = await load(ctx.store, task.id)
    if task.status == "arbitration":
        return await after_arbiter_turn(
            task, turn, run, room, policy, history, now=now, owner=owner, data_dir=ctx.data_dir
        )
    extras = await ctx.store.task_extras(task.id)
    limits = effective_thresholds(policy.thresholds, int(extras.get("grants", 0)))
    if task.status == "finalize":
        return await after_finalize(
            task, turn, run, room, policy, tree_before=tree_before, now=now, owner=owner,
            history=history, limits=limits,
        )  # fmt: skip
    return await after_work_turn(
        task, turn, run, room, policy, history, limits, now=now, owner=owner
    )
