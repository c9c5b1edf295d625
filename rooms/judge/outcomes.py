"""How a ruling turned out, from what the engine can see (DESIGN §5, the outcome ledger).

A ruling's cycle runs from its arbiter turn to the next ruling or the task's close (as its
decision record's Outcome section, rooms/core/decisions). What settles it:

- PROCEED is **borne out** when the reviewer approves before another ruling is needed; **not
  borne out** when another ruling comes first, or the task closes without an approval.
- REVISE and RESET are borne out when the owner's next rounds satisfy the reviewer (an
  approval) before another ruling; not borne out when the pair needed another ruling (the same
  findings again, another stall) or the task closed without an approval.
- ESCALATE (also an unreadable ruling, which escalates) is **upheld** when an approver picks one
  of the options it offered (or approves its yes/no question), **overridden** when they answer
  in their own words or reject (close the task); **unanswered** when the question closed with
  the task moving on; the people's time to decide is kept.
- Any ruling stays **pending** while its cycle goes on.

A ruling that was sent back once says whether the second answer was complete.
The judgment is a pure function of the stored turns, rulings, firings and escalations, so
writing it again gives the same row (rooms/store/outcomes.py keeps it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rooms.base.model import Turn
from rooms.base.records import Escalation, FiringRow, VerdictRow
from rooms.base.words import APPROVED, ARBITER, ESCALATE, REVIEWER, WORK_ROLES
from rooms.judge.sendback import sent_back_problem

PENDING = "pending"
BORNE_OUT = "borne_out"
NOT_BORNE_OUT = "not_borne_out"
UPHELD = "upheld"
OVERRIDDEN = "overridden"
UNANSWERED = "unanswered"
RESULTS = (PENDING, BORNE_OUT, NOT_BORNE_OUT, UPHELD, OVERRIDDEN, UNANSWERED)
# A send-back's second answer.
COMPLETE = "complete"
INCOMPLETE = "incomplete"


@dataclass(frozen=True)
class Outcome:
    """One ruling's row in the ledger."""

    verdict_id: int
    task_id: int
    verdict: str
    result: str  # one of RESULTS
    detail: str  # what settled it, in words
    ruled_at: float
    settled_at: float | None = None
    # From the detector's firing (or the person's call) to the ruling: the arbiter's time.
    ruling_s: float | None = None
    # ESCALATE: from the question to the people's answer.
    people_s: float | None = None
    answer: str | None = None
    sent_back: str | None = None  # None: not sent back; COMPLETE or INCOMPLETE
    group: str = ""  # the task's group (filled in by the store)


def judge(
    verdict: VerdictRow,
    following: VerdictRow | None,
    turns: list[Turn],
    firings: list[FiringRow],
    escalations: list[Escalation],
    *,
    closed_at: float | None,
) -> Outcome:
    """`following`: the task's next ruling, if any; `closed_at`: when the task closed (None: it
    is open)."""
    fired = next((f for f in firings if f.id == verdict.firing_id), None)
    base = Outcome(
        verdict_id=verdict.id,
        task_id=verdict.task_id,
        verdict=verdict.ruling.verdict,
        result=PENDING,
        detail="its cycle goes on",
        ruled_at=verdict.at,
        ruling_s=max(verdict.at - fired.at, 0.0) if fired is not None else None,
        sent_back=_send_back(verdict, turns),
    )
    if verdict.ruling.verdict == ESCALATE or not verdict.ruling.readable:
        return _escalated(base, verdict, following, escalations)
    end_seq = following.turn_seq if following is not None else None
    approval = next(
        (
            t
            for t in turns
            if t.role == REVIEWER
            and t.status == "done"
            and t.marker == APPROVED
            and t.seq > verdict.turn_seq
            and (end_seq is None or t.seq < end_seq)
        ),
        None,
    )
    if approval is not None:
        return _settled(
            base,
            BORNE_OUT,
            f"the reviewer approved at turn {approval.seq} without another ruling",
            approval.ended_at,
        )
    if following is not None:
        why = next((f.firing.detector for f in firings if f.id == following.firing_id), None)
        return _settled(
            base,
            NOT_BORNE_OUT,
            f"another ruling was needed ({following.ruling.verdict} at turn "
            f"{following.turn_seq}" + (f", after {why})" if why else ")"),
            following.at,
        )
    if closed_at is not None:
        return _settled(base, NOT_BORNE_OUT, "the task closed without an approval", closed_at)
    return base


def _escalated(
    base: Outcome, verdict: VerdictRow, following: VerdictRow | None, esc: list[Escalation]
) -> Outcome:
    end_at = following.at if following is not None else None
    asked = next(
        (
            e
            for e in esc
            if e.created_at >= verdict.at and (end_at is None or e.created_at < end_at)
        ),
        None,
    )
    if asked is None:
        return base
    if asked.status == "closed" or (asked.status == "answered" and not asked.answered_by):
        return _settled(base, UNANSWERED, "the question closed as the task moved on", None)
    if asked.status != "answered" or asked.answered_at is None:
        return base
    answer = asked.answer or ""
    who = " ".join((asked.answered_by or "").split())
    if answer == "approve" or answer.startswith("option "):
        result, how = (
            UPHELD,
            ("approved" if answer == "approve" else f"chose {' '.join(answer.split())}"),
        )
    elif answer == "reject":
        result, how = OVERRIDDEN, "rejected it (the task closed)"
    else:
        result, how = OVERRIDDEN, "answered in their own words"
    settled = _settled(base, result, f"{who} {how}", asked.answered_at)
    return replace(settled, people_s=max(asked.answered_at - asked.created_at, 0.0), answer=answer)


def _settled(base: Outcome, result: str, detail: str, at: float | None) -> Outcome:
    return replace(base, result=result, detail=detail, settled_at=at)


def _send_back(verdict: VerdictRow, turns: list[Turn]) -> str | None:
    """Whether the arbitration that gave `verdict` sent an answer back first, and if so whether
    the second answer was complete (applied as given, not escalated for what it still lacked)."""
    last_work = max(
        (t.seq for t in turns if t.role in WORK_ROLES and t.seq < verdict.turn_seq), default=0
    )
    sent = [
        t
        for t in turns
        if t.role == ARBITER
        and last_work < t.seq < verdict.turn_seq
        and sent_back_problem(t.error) is not None
    ]
    if not sent:
        return None
    escalated_for_it = verdict.ruling.verdict == ESCALATE and not verdict.ruling.readable
    return INCOMPLETE if escalated_for_it else COMPLETE
