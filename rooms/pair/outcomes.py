"""Pieces every kind of turn ends with: the turn record, its post, and a runner failure.

A failed run is recorded with its code and reason and posted. The same role is retried once; a
second consecutive failure asks the humans, naming the failure, rather than stopping silently.
A turn the credential proxy stopped for the budget asks them at once, as a ceiling does.
"""

from __future__ import annotations

from typing import Literal

from rooms.escalations import ask
from rooms.model import GroupPolicy, RoomRef, Task, Turn
from rooms.records import Change, OutboxDraft, TurnEnd
from rooms.turns import RunOutcome
from runners.protocol import BUDGET

POST_LIMIT = 30_000  # characters posted from one output; platforms split, the store keeps all


def turn_end(
    turn: Turn,
    run: RunOutcome,
    now: float,
    *,
    marker: str | None = None,
    unmarked: bool = False,
    tree: str | None = None,
) -> TurnEnd:
    status: Literal["done", "failed"] = "failed" if run.failed else "done"
    code, error = run.failure() if run.failed else (None, None)
    return TurnEnd(
        turn_id=turn.id,
        status=status,
        ended_at=now,
        output=run.output,
        structured=run.structured,
        marker=marker,
        unmarked=unmarked,
        error_code=code,
        error=error,
        tree=tree,
        session_id=run.session_id,
        usage=run.usage,
    )


def post(
    room: RoomRef, turn: Turn, text: str, *, key: str = "output", persona: str | None = None
) -> OutboxDraft:
    """A message about `turn`; its key makes it unique, so re-applying never posts it twice."""
    if len(text) > POST_LIMIT:
        text = text[:POST_LIMIT] + "\n[… cut; the full output is stored with the task]"
    return OutboxDraft(
        f"turn:{turn.id}:{key}", room, text or "(no output)", persona=persona or turn.role
    )


def failure_change(
    task: Task,
    turn: Turn,
    run: RunOutcome,
    room: RoomRef,
    policy: GroupPolicy,
    *,
    now: float,
    failures_before: int,
    owner: str,
) -> Change:
    code, error = run.failure()
    what = f"{turn.role} turn {turn.seq} failed ({code}): {error}"
    change = Change(
        task.id,
        now,
        expect_version=task.version,
        expect_lease=owner,
        turn=turn_end(turn, run, now),
    )
    if code == BUDGET:
        # The credential proxy refused a request: the task's budget is spent. That is a ceiling
        # (an approver may grant another budget), not a failure to retry.
        change.event = "failed" if task.status == "finalize" else "ceiling"
        change.escalation = ask(
            task,
            room,
            policy,
            kind="ceiling",
            question="the task's budget is spent. Continue with another budget of the same size?",
            reason=what,
        )
        change.outbox.append(post(room, turn, f"⚠️ The {what}.", key="failed", persona="tribunal"))
    elif failures_before >= 1:
        change.event = "failed"
        change.escalation = ask(
            task,
            room,
            policy,
            kind="failure",
            question=f"the {turn.role}'s run failed twice in a row. Retry or close?",
            reason=what,
        )
        change.outbox.append(post(room, turn, f"⚠️ The {what}.", key="failed", persona="tribunal"))
    else:
        change.failures = "inc"
        change.outbox.append(
            post(room, turn, f"⚠️ The {what}. Retrying once.", key="failed", persona="tribunal")
        )
    return change
