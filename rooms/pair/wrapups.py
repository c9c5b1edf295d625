"""The wrap-up ↔ review cycle is bounded (DESIGN §3, §4).

A wrap-up that changes the work sends it back to the reviewer, whose approval leads to another
wrap-up: without a bound an owner that touches a file in every wrap-up loops for ever, past
every ceiling (an approval goes to its wrap-up even at a ceiling). So after a wrap-up that
changed the work, before it goes back to review:

- the ceilings (turns, wall time, tokens, cost) are checked as after any other turn, and
- the `max_changed_wrapups`-th wrap-up that changed the work since a person last spoke
  (default 2) asks the people instead of sending it back again.

Either way the question goes to the people here (`waiting_human`), naming the reason.
"""

from __future__ import annotations

from rooms.base.model import GroupPolicy, RoomRef, Task, Thresholds, Turn
from rooms.base.records import EscalationDraft
from rooms.base.words import APPROVED, ARBITER, CEILING, OWNER, REVIEWER
from rooms.core.escalations import ask
from rooms.judge.detectors import check
from rooms.judge.history import History
from rooms.pair.states import TABLE


def changed_wrapups(history: History, turn: Turn) -> int:
    """Wrap-ups that changed the work since a person last spoke, `turn` (one that did) included.
    A wrap-up is the owner's turn right after a reviewer's APPROVED; it changed the work when
    its tree differs from the approved one."""
    since = max((m.before_seq for m in history.messages), default=0)
    count = 1
    previous: Turn | None = None
    for t in history.done:
        if t.role == ARBITER:
            continue
        if (
            previous is not None
            and t.id != turn.id
            and t.seq >= since
            and t.role == OWNER
            and previous.role == REVIEWER
            and previous.marker == APPROVED
            and t.tree != previous.tree
        ):
            count += 1
        previous = t
    return count


def escalation_after_changed_wrapup(
    task: Task,
    turn: Turn,
    room: RoomRef,
    policy: GroupPolicy,
    history: History,
    limits: Thresholds,
    *,
    tokens: int,
    cost_usd: float,
    now: float,
) -> EscalationDraft | None:
    """The question for the people when the changed work must not go back to review again."""
    firing = check(
        [],
        limits,
        turns=len(history.turns),
        tokens=tokens,
        cost_usd=cost_usd,
        started_at=task.created_at + history.waited_s,
        now=now,
    )
    if firing is not None:
        return ask(
            task,
            room,
            policy,
            table=TABLE,
            kind=CEILING,
            question="the task reached a ceiling. Continue with another budget of the same size?",
            reason=firing.reason,
        )
    count = changed_wrapups(history, turn)
    if count >= limits.max_changed_wrapups:
        return ask(
            task,
            room,
            policy,
            table=TABLE,
            kind="wrapups",
            question=(
                f"the owner changed the work in {count} wrap-ups after the reviewer approved it. "
                "Send it back to the owner, or close?"
            ),
            reason=f"{count} wrap-ups changed the approved work",
        )
    return None
