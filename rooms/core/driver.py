"""The driver of one task, for any protocol: claim its lease, then run turns until nobody acts
(a person must, or the task closed).

One step = the task, its room and its history (a `Step`) → the task's protocol says how the next
turn begins → the turn is recorded as running (with the messages people wrote since the last
look) → the protocol's run spec → one run → the protocol's `Change` (the turn's output, usage,
firing, verdict, posts and the transition together) → applied atomically, unless people wrote or
called the arbiter while the agent worked (then decided again with that). Two round trips to the
store per turn (rooms/store/steps.py): the history is kept in memory between steps
(rooms/core/kept_history.py) and read again only on start or when the task is not at the
version the driver left it at, and the next step starts from the task as the last change left
it (the turn's guard checks that nobody moved it meanwhile, and renews the lease).
A person's pending `arbitrate` is taken between turns, by a protocol that has a judge to call
(rooms.core.summons); a turn stopped by `arbitrate now` is kept as interrupted and the loop goes on.
Decision records are completed after each change that ends or moves a ruling's cycle on.
Lost races never half-apply: a lost lease stops the turn, a lost compare-and-swap keeps the turn's
output on the turn (marked interrupted) and re-reads the task. On taking over a task, turns left
running by a dead engine are marked interrupted and run again; so is a turn whose container
engine stopped answering (runners.protocol ENGINE_LOST: the backend drained that engine), up to
MAX_ENGINE_LOSSES times in a row; then the turn is decided as failed, as any other failure.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from rooms.base.machine import UnknownProtocol
from rooms.base.model import GroupPolicy, RoomRef, Task, Turn
from rooms.base.records import Change
from rooms.base.words import CLOSED, WAITING_HUMAN
from rooms.core.context import Ctx
from rooms.core.decisions import complete_records
from rooms.core.kept_history import KeptHistory, last_message_id, with_messages
from rooms.core.outputs import post
from rooms.core.progress import close_open_progress, removes_progress
from rooms.core.protocol import Protocol, Step, TurnStart
from rooms.core.registry import protocol_for
from rooms.core.summons import Summonable, accepts
from rooms.core.turns import RunOutcome, effective_thresholds, run_turn
from rooms.store.apply import Stale
from rooms.work import worktrees
from runners.protocol import ENGINE_LOST

log = logging.getLogger(__name__)
CONFIG = "config"  # error code of a turn that could not be started (e.g. a bad prompt override)
# A turn whose container engine was lost runs again, up to this many times in a row per role.
MAX_ENGINE_LOSSES = 3
MAX_REDECIDE = 2  # decisions made again because people wrote while it was made (see below)
ENGINE_LOST_REASON = "its container engine stopped answering"  # on such a turn's error


def _acts(task: Task | None) -> Protocol | None:
    """The task's protocol when someone acts in its status; None: nothing to drive."""
    if task is None:
        return None
    protocol = protocol_for(task.protocol)
    return protocol if protocol.table.actor(task.status) is not None else None


async def drive(ctx: Ctx, task_id: int) -> None:
    while True:
        if _acts(await ctx.store.task(task_id)) is None:
            return
        claimed = await ctx.store.claim_task(task_id, ctx.engine_id, ctx.wall(), ctx.lease_s)
        if claimed is not None:
            break
        if ctx.lease_elsewhere is not None:  # the engine watches for its end
            ctx.lease_elsewhere(task_id)
            return
        await asyncio.sleep(ctx.lease_poll_s)  # another engine drives it; watch for its end
    kept = KeptHistory()
    try:
        room = await _recover(ctx, claimed)
        # The first step starts from the task as claimed: recovering changes turns and posts,
        # not the task's row, and the first turn's guard checks that nobody else moved it.
        task: Task | None = claimed  # None: read at the top of the loop
        while True:
            if task is None:
                # The task as it is, read by renewing our claim on it (one statement): None when
                # it was taken over (the other engine drives it now) or closed.
                task = await ctx.store.claim_task(task_id, ctx.engine_id, ctx.wall(), ctx.lease_s)
            protocol = _acts(task)
            if task is None or protocol is None:
                return
            policy = ctx.policies.for_room(room) if room else None
            if room is None or policy is None:
                log.warning(
                    "task %s: room %s has no group any more; not driving", task.id, task.room
                )
                return
            try:
                policy, note = await worktrees.for_task(
                    policy, task, ctx.data_dir, ctx.store, ctx.now()
                )
            except worktrees.WorktreeError as exc:
                await ctx.store.apply(worktrees.refusal(task, room, str(exc), ctx.now()))
                ctx.wake_outbox()
                return
            if note is not None:  # its branch got another name: a branch had taken its own
                await ctx.store.apply(worktrees.notice(task, room, note, ctx.now()))
                ctx.wake_outbox()
            if task.summon is not None and accepts(protocol, task.status):
                await _summon(ctx, protocol, task, room, policy)
                kept.forget()
                task = None
                continue
            task = await step(ctx, protocol, task, room, policy, kept)
    finally:
        await asyncio.shield(ctx.store.release(task_id, ctx.engine_id))


async def _recover(ctx: Ctx, task: Task) -> RoomRef | None:
    """We hold the lease of `task` (as claimed), so a running turn belongs to an engine that
    died or gave up. Returns the task's room (rooms never change, so the driver reads it
    once)."""
    now, task_id = ctx.now(), task.id
    stale = await ctx.store.interrupt_turns(
        task_id, "interrupted: the engine running it stopped; it runs again", now
    )
    room = await ctx.store.room(task.room)
    # Their progress messages (and any other of the task's that never said how its turn ended)
    # say so now: best effort, the engine's first scan tries again what fails here.
    await close_open_progress(ctx.store, ctx.platform, task_id=task_id, removes=removes_progress_of)
    if not stale or room is None:
        return room
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
    return room


def removes_progress_of(protocol: str) -> bool:
    """Whether a finished turn of the protocol (by name) has its progress message removed."""
    try:
        return removes_progress(protocol_for(protocol))
    except UnknownProtocol:
        return False


async def _read(
    ctx: Ctx, task: Task, room: RoomRef, policy: GroupPolicy, kept: KeptHistory | None = None
) -> Step:
    """The step's `Step`; its history is the kept one when it is valid for `task`."""
    history = kept.valid_for(task) if kept is not None else None
    if history is None:
        history = await ctx.store.history(task.id)
        if kept is not None:
            kept.load(history, task)
    return Step(
        task=task,
        room=room,
        policy=policy,
        history=history,
        limits=effective_thresholds(policy.thresholds, task.grants),
        now=ctx.now(),
        owner=ctx.engine_id,
        data_dir=ctx.data_dir,
        references=ctx.references.for_group(policy.name),
        panels=ctx.store,
    )


async def _summon(
    ctx: Ctx, protocol: Protocol, task: Task, room: RoomRef, policy: GroupPolicy
) -> None:
    assert isinstance(protocol, Summonable)
    change = await protocol.summon(await _read(ctx, task, room, policy))
    if await ctx.store.apply(change) is not None:
        await complete_records(ctx, task.id)  # past the cap, the last ruling's cycle goes on
    ctx.wake_outbox()


async def step(
    ctx: Ctx,
    protocol: Protocol,
    task: Task,
    room: RoomRef,
    policy: GroupPolicy,
    kept: KeptHistory | None = None,
) -> Task | None:
    """One step. Returns the task as its change left it (the next step starts from it), or
    None: the driver reads the task again."""
    kept = kept if kept is not None else KeptHistory()
    before = await _read(ctx, task, room, policy, kept)
    begin_all = getattr(protocol, "begin_all", None)
    starts = await begin_all(before) if begin_all is not None else [await protocol.begin(before)]
    if len(starts) > 1:
        kept.forget()
        await step_all(ctx, protocol, before, starts)
        return None
    start = starts[0]
    begun = await ctx.store.begin_step(
        task,
        start.role,
        ctx.engine_id,
        ctx.now(),
        wall=ctx.wall(),
        lease_s=ctx.lease_s,
        since_message=last_message_id(before.history),
        tree_before=start.tree_before,
        resumed_from=start.resume,
    )
    if begun is None:
        kept.forget()
        return None  # lost a race (version, lease or a summon); the driver re-reads the task
    turn, written, rounds = begun
    if rounds != task.rounds:  # a person's message reset them since the task was read
        task = task.model_copy(update={"rounds": rounds})
    before = replace(before, task=task, history=with_messages(before.history, written))
    kept.forget()  # kept again below, once the turn's end is known
    run = RunOutcome()
    try:
        try:
            spec = await protocol.spec(before, turn)
        except Exception as exc:
            run = RunOutcome(error_code=CONFIG, error=f"the turn could not be started: {exc}")
        else:
            run = await run_turn(
                ctx,
                task.id,
                spec,
                room,
                turn.seq,
                outcome=run,
                turn_id=turn.id,
                remove_when_finished=removes_progress(protocol),
            )
        if run.lost_lease:
            await _keep(ctx, task, turn, run, "the task was closed or taken over while it ran")
            return None
        if run.interrupted:  # `arbitrate now`: the driver goes on to the summon
            await _keep(ctx, task, turn, run, ctx.stop_reasons.pop(task.id, "it was stopped"))
            return None
        if run.error_code == ENGINE_LOST and await _may_run_again(ctx, task, turn):
            await _run_again(ctx, task, room, turn, run)
            return None
        after, change, applied = await _decide_and_apply(ctx, protocol, before, turn, run)
        kept.keep_after(after.history, change, applied)
        if applied is None:
            await _keep(ctx, task, turn, run, "the task changed while the turn ran")
        elif change.verdict is not None or applied.status in (CLOSED, WAITING_HUMAN):
            await complete_records(ctx, task.id)  # a ruling's cycle ended or moved on
        elif applied.arbitrations:
            await ctx.store.settle_outcomes(task.id)  # an approval may bear a ruling out
        ctx.wake_outbox()
        return applied
    except asyncio.CancelledError:
        reason = ctx.stop_reasons.pop(task.id, "the engine stopped while it ran")
        await asyncio.shield(_keep(ctx, task, turn, run, reason))
        raise


async def _decide_and_apply(
    ctx: Ctx, protocol: Protocol, before: Step, turn: Turn, run: RunOutcome
) -> tuple[Step, Change, Task | None]:
    """The protocol's decision on the run, applied. People may have written, or called the
    arbiter, while the turn ran: the change carries what the decision saw, and the store writes
    it only when nothing came since (in the same round trip); else the decision is made again
    with what came. After MAX_REDECIDE such misses the change is applied on what it saw (what
    came is read by the next step, as a message written just after a decision always was). A
    protocol whose decision on this turn must be made once (`decides_once`) reads first."""
    task, history, summon = before.task, before.history, before.task.summon
    guarded = MAX_REDECIDE
    once = getattr(protocol, "decides_once", None)
    if once is not None and once(before, turn):
        # This decision acts outside its change (the pair's wrap-up commits the approved
        # tree): it is made once, on what people did while the turn ran, read first.
        written, now_summon, exists = await ctx.store.since_run(task.id, last_message_id(history))
        history = with_messages(history, written)
        summon = now_summon if exists else summon
        guarded = 0
    for attempt in range(guarded + 1):
        after = before.after(turn, history.messages, ctx.now())
        if summon != task.summon:
            after = replace(after, task=task.model_copy(update={"summon": summon}))
        change = await protocol.decide(after, turn, run)
        if attempt < guarded:
            change.seen_message, change.seen_summon = last_message_id(history), summon
        applied = await ctx.store.apply_step(change)
        if not isinstance(applied, Stale):
            return after, change, applied
        history, summon = with_messages(history, applied.messages), applied.summon
    raise AssertionError("unreachable: the last attempt is applied unguarded")


async def step_all(ctx: Ctx, protocol: Protocol, before: Step, starts: list[TurnStart]) -> None:
    """A phase that runs several actors at once (a protocol with `begin_all`, e.g. the arena's
    researchers or experts): every turn begins, all run concurrently, then each outcome is
    decided and applied in turn order, each on the task as the one before left it (a fresh
    task and history), so the last one decided sees the whole phase."""
    task, room = before.task, before.room
    turns: list[Turn] = []
    for start in starts:
        turn = await ctx.store.begin_turn(
            task,
            start.role,
            ctx.engine_id,
            ctx.now(),
            tree_before=start.tree_before,
            resumed_from=start.resume,
            wall=ctx.wall(),
        )
        if turn is None:
            break  # lost a race: the turns begun so far run; the driver re-reads the task after
        turns.append(turn)
    runs = [RunOutcome() for _ in turns]

    async def run_one(i: int, turn: Turn) -> None:
        try:
            spec = await protocol.spec(before, turn)
        except Exception as exc:
            runs[i] = RunOutcome(error_code=CONFIG, error=f"the turn could not be started: {exc}")
            return
        runs[i] = await run_turn(
            ctx,
            task.id,
            spec,
            room,
            turn.seq,
            turn_id=turn.id,
            remove_when_finished=removes_progress(protocol),
        )

    decided_ids: set[int] = set()
    try:
        await asyncio.gather(*(run_one(i, t) for i, t in enumerate(turns)))
        for turn, run in zip(turns, runs, strict=True):
            decided_ids.add(turn.id)
            if run.lost_lease:
                await _keep(ctx, task, turn, run, "the task was closed or taken over while it ran")
                continue
            if run.interrupted:
                await _keep(ctx, task, turn, run, ctx.stop_reasons.pop(task.id, "it was stopped"))
                continue
            if run.error_code == ENGINE_LOST and await _may_run_again(ctx, task, turn):
                await _run_again(ctx, task, room, turn, run)
                continue
            fresh = await ctx.store.task(task.id)
            if fresh is None:
                return
            now = ctx.now()
            step_now = replace(
                before, task=fresh, history=await ctx.store.history(task.id), now=now
            )
            change = await protocol.decide(step_now, turn, run)
            if await ctx.store.apply(change) is None:
                await _keep(ctx, task, turn, run, "the task changed while the turn ran")
        ctx.wake_outbox()
    except asyncio.CancelledError:
        reason = ctx.stop_reasons.pop(task.id, "the engine stopped while it ran")
        for turn, run in zip(turns, runs, strict=True):
            if turn.id not in decided_ids:
                await asyncio.shield(_keep(ctx, task, turn, run, reason))
        raise


async def _may_run_again(ctx: Ctx, task: Task, turn: Turn) -> bool:
    """Whether a turn whose engine was lost runs again: yes, unless the role's last
    MAX_ENGINE_LOSSES - 1 turns were lost so too (engines that keep failing, or one flapping
    between drained and back): then this one is decided as the failure it is."""
    lost = 0
    for earlier in reversed(await ctx.store.turns(task.id)):
        if earlier.id == turn.id or earlier.role != turn.role:
            continue
        if earlier.status != "interrupted" or ENGINE_LOST_REASON not in (earlier.error or ""):
            break
        lost += 1
    return lost < MAX_ENGINE_LOSSES - 1


async def _run_again(ctx: Ctx, task: Task, room: RoomRef, turn: Turn, run: RunOutcome) -> None:
    """The container engine running the turn stopped answering (runners.protocol ENGINE_LOST):
    not the agent's failure. The turn is kept as interrupted, the room told, and the next step
    begins it again (the backend places it on another engine)."""
    await _keep(ctx, task, turn, run, f"{ENGINE_LOST_REASON}: {run.error or 'no reason given'}")
    note = post(
        room,
        turn,
        f"↻ The {turn.role}'s turn {turn.seq} was interrupted: its container engine stopped "
        f"answering. Running it again on another one.",
        key="interrupted",
        persona="tribunal",
    )
    await ctx.store.apply(Change(task.id, ctx.now(), outbox=[note]))
    ctx.wake_outbox()


async def _keep(ctx: Ctx, task: Task, turn: Turn, run: RunOutcome, reason: str) -> None:
    """Mark the turn interrupted, keeping whatever output it produced and usage it spent."""
    await ctx.store.interrupt_turns(
        task.id,
        f"interrupted: {reason}",
        ctx.now(),
        output=run.output,
        turn_id=turn.id,
        usage=run.usage,
    )
