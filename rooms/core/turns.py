"""Running one turn through the runner: the spec, the events, the lease kept alive meanwhile.

`run_turn` never raises for a runner's failure: a missing final, an error event, an exception
from a misbehaving backend or the engine's own wall-clock safety net all come back as a failed
`RunOutcome` with a code and a reason. It only raises CancelledError, when the turn is cancelled
(a stop, or the engine shutting down); the caller records the turn as interrupted. A turn
stopped through `Ctx.interrupt_turn` (`arbitrate now`) returns with `interrupted` set instead, so
its driver records it as interrupted and goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from rooms.base.model import GroupPolicy, RoomRef, Task, Thresholds, Turn
from rooms.base.records import Usage
from rooms.core.context import Ctx
from rooms.core.progress import FAILED, FINISHED, INTERRUPTED, Progress
from rooms.work import worktrees
from runners.protocol import CRASHED, ENGINE_LOST, HARD_TIMEOUT, RunEvent, RunRequest, RunSpec

log = logging.getLogger(__name__)
# The backend enforces the hard timeout; this margin is only for a backend that fails to.
SAFETY_MARGIN_S = 60.0
# How long a turn may wait for its backend to start it, in units of its own time limit (a turn
# queued behind others of its group and role waits for them to finish).
START_WAIT_FACTOR = 4


@dataclass
class RunOutcome:
    output: str = ""
    structured: dict[str, Any] | None = None
    got_final: bool = False
    session_id: str | None = None
    usage: Usage = field(default_factory=Usage)
    error_code: str | None = None
    error: str | None = None
    lost_lease: bool = False  # another engine took the task over, or it was closed elsewhere
    interrupted: bool = False  # stopped by Ctx.interrupt_turn (`arbitrate now`); its driver goes on

    @property
    def failed(self) -> bool:
        return not self.got_final

    def failure(self) -> tuple[str, str]:
        code = self.error_code or CRASHED
        return code, self.error or "the runner ended without a final answer"


def effective_thresholds(t: Thresholds, grants: int) -> Thresholds:
    """Each approval of a ceiling escalation grants one more budget of the same size."""
    if grants <= 0:
        return t
    k = 1 + grants
    return replace(
        t,
        max_turns=t.max_turns * k,
        max_wall_s=t.max_wall_s * k,
        max_tokens=t.max_tokens * k,
        max_cost_usd=t.max_cost_usd * k,
    )


def build_spec(
    task: Task,
    turn: Turn,
    policy: GroupPolicy,
    *,
    prompt: str,
    system_prompt: str,
    resume: str | None,
    output_schema: dict[str, Any] | None,
    budget_left_usd: float | None,
    read_only: bool,
    tokens_left: int | None = None,
) -> RunSpec:
    """The run spec of `turn`; `read_only`: whether it may change the workspace (the protocol
    says: in the pair only the owner writes)."""
    role = turn.role
    agent = policy.agent_for(role)
    request = RunRequest(
        role=role,
        prompt=prompt,
        system_prompt=system_prompt,
        model=agent.model,
        resume_session_id=resume,
        output_schema=output_schema,
        read_only=read_only,
        max_turns=max(1, policy.max_agent_turns),
        max_budget_usd=budget_left_usd,
    )
    git = worktrees.git_metadata(policy.workspace)
    return RunSpec(
        group=policy.name,
        agent=agent.agent,
        request=request,
        workspace=policy.workspace,
        git_dir=git[0] if git else None,
        git_common_dir=git[1] if git else None,
        # Labels for logs and containers; never credentials (those come from the backend).
        env={"TRIBUNAL_TASK": str(task.id), "TRIBUNAL_TURN": str(turn.seq)},
        idle_timeout_s=policy.idle_timeout_s,
        hard_timeout_s=policy.hard_timeout_s,
        tokens_left=tokens_left,
    )


async def run_turn(
    ctx: Ctx,
    task_id: int,
    spec: RunSpec,
    room: RoomRef,
    seq: int,
    outcome: RunOutcome | None = None,
    *,
    turn_id: int | None = None,
    remove_when_finished: bool = False,
) -> RunOutcome:
    """Run the turn into `outcome` (a fresh one when not given): a caller that passes its own
    still has what the run produced (output, usage) when the turn is cancelled. With `turn_id`,
    its progress message is kept on the turn until it says how the turn ended;
    `remove_when_finished`: the turn's output is posted on its own, so a finished turn's
    progress message goes (rooms/core/progress.py)."""
    outcome = outcome if outcome is not None else RunOutcome()

    async def remember(message_id: str | None) -> None:
        if turn_id is not None:
            await ctx.store.set_progress_message(turn_id, message_id)

    progress = Progress(
        ctx.platform,
        room,
        spec.request.role,
        seq,
        remember,
        remove_when_finished=remove_when_finished,
    )
    work = asyncio.create_task(_consume(ctx, spec, outcome, progress))
    loop = asyncio.get_running_loop()
    keeper: asyncio.Task[None] | None = None

    def keep_lease() -> None:
        nonlocal keeper
        keeper = asyncio.create_task(_keep_lease(ctx, task_id, work, outcome))

    # The lease keeper starts at the first heartbeat: a turn that ends before it (an instant
    # runner, a refusal) costs a timer, not a task that is scheduled, sleeps and is cancelled.
    first_beat = loop.call_later(ctx.heartbeat_s, keep_lease)
    stop: asyncio.Future[None] = loop.create_future()
    ctx.turn_interrupts[task_id] = stop
    interrupted = False
    try:
        await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        if not work.done():
            interrupted = outcome.interrupted = True
    except asyncio.CancelledError:
        interrupted = True
        raise
    finally:
        if ctx.turn_interrupts.get(task_id) is stop:
            del ctx.turn_interrupts[task_id]
        first_beat.cancel()
        if keeper is not None:
            keeper.cancel()
        if not work.done():
            work.cancel()  # we were cancelled or interrupted: stop the agent
        with contextlib.suppress(asyncio.CancelledError):
            running = [work] if keeper is None else [work, keeper]
            await asyncio.gather(*running, return_exceptions=True)
        if interrupted or outcome.lost_lease:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                async with asyncio.timeout(5):
                    await progress.finish(INTERRUPTED)
    if outcome.error_code == ENGINE_LOST:  # it runs again (rooms/core/driver.py)
        await progress.finish(INTERRUPTED)
    elif not outcome.lost_lease and not outcome.interrupted:
        await progress.finish(FAILED if outcome.failed else FINISHED)
    return outcome


async def _consume(ctx: Ctx, spec: RunSpec, outcome: RunOutcome, progress: Progress) -> None:
    # The engine's own safety net counts from the runner's first event: a backend may queue a
    # turn behind others of the same (group, role) (they share a container and a workspace),
    # or until a runner slot is free, and that wait is not the turn's. Before the first event
    # it allows a bounded wait.
    limit = spec.hard_timeout_s + SAFETY_MARGIN_S
    start_limit = limit * START_WAIT_FACTOR
    loop = asyncio.get_running_loop()
    started = False
    try:
        async with asyncio.timeout(start_limit) as deadline:
            events: AsyncIterator[RunEvent] = ctx.runner.run(spec)
            try:
                async for event in events:
                    # A `queued` event is the backend still waiting for a runner slot.
                    if not started and event.kind != "queued":
                        started = True
                        deadline.reschedule(loop.time() + limit)
                    await _take(event, outcome, progress)
            finally:
                aclose = getattr(events, "aclose", None)
                if aclose is not None:
                    await aclose()
    except TimeoutError:
        outcome.got_final = False
        outcome.error_code = HARD_TIMEOUT
        if started:
            outcome.error = f"the runner did not finish within {limit:.0f} s"
        else:
            outcome.error = f"the runner did not start within {start_limit:.0f} s"
    except Exception as exc:  # a backend must not raise, but one that does fails the turn only
        log.exception("runner raised for %s", spec.request.role)
        outcome.got_final = False
        outcome.error_code = CRASHED
        outcome.error = f"the runner raised {type(exc).__name__}: {exc}"


# A runner's usage is a claim, not a fact: NaN, infinite, negative or absurd values would poison
# the task's sums (a NaN cost is stored as NULL and the task no longer loads; an integer past
# SQLite's 64 bits cannot be stored at all). Such an event is ignored, with a log line.
MAX_TOKENS_PER_EVENT = 10**12
MAX_COST_PER_EVENT_USD = 1e9


def usable(event: RunEvent) -> bool:
    tokens = (event.input_tokens, event.output_tokens)
    if any(not 0 <= t <= MAX_TOKENS_PER_EVENT for t in tokens):
        return False
    return math.isfinite(event.cost_usd) and 0.0 <= event.cost_usd <= MAX_COST_PER_EVENT_USD


async def _take(event: RunEvent, outcome: RunOutcome, progress: Progress) -> None:
    if event.kind == "final":
        outcome.output = event.text
        outcome.structured = event.structured
        outcome.got_final = True
    elif event.kind == "usage":
        u = outcome.usage
        if not usable(event):
            log.warning(
                "ignored a usage event that is not finite and non-negative: %r %r %r",
                event.input_tokens, event.output_tokens, event.cost_usd,
            )  # fmt: skip
            return
        outcome.usage = Usage(
            u.input_tokens + event.input_tokens,
            u.output_tokens + event.output_tokens,
            u.cost_usd + event.cost_usd,
        )
    elif event.kind == "session":
        outcome.session_id = event.session_id or outcome.session_id
    elif event.kind == "error":
        # An error after the final is a second, different answer (container/supervision.py):
        # the turn fails; the first answer never wins.
        outcome.got_final = False
        outcome.error_code = event.code or CRASHED
        outcome.error = event.text or "the runner reported an error"
    elif event.kind == "queued":
        await progress.queued(event.text)
    elif event.kind == "progress":
        await progress.update(event.text)
    elif event.kind == "tool":
        await progress.update(f"{event.tool or 'tool'}: {event.text}")


async def _keep_lease(ctx: Ctx, task_id: int, work: asyncio.Task[None], o: RunOutcome) -> None:
    """Renew the lease while the turn runs; if it is lost, stop the turn: someone else owns the
    task now (or it was closed), and two engines must never run the same task. Started at the
    first heartbeat (`run_turn`): it renews at once, then once a heartbeat."""
    while True:
        try:
            held = await ctx.store.renew(task_id, ctx.engine_id, ctx.wall(), ctx.lease_s)
        except Exception:
            log.exception("renewing the lease of task %s failed; trying again", task_id)
            held = True  # at the next heartbeat
        if not held:
            o.lost_lease = True
            work.cancel()
            return
        await asyncio.sleep(ctx.heartbeat_s)
