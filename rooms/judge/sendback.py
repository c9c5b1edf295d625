"""Checked rulings (DESIGN §5): an incomplete ruling goes back to the arbiter once.

A readable ruling that lacks what its verdict needs (`verdicts.check_ruling`: a REVISE without
conditions, a RESET without a new direction, an ESCALATE without a question and 2–4 options) is
not applied: a fresh arbiter turn is asked again, its prompt naming exactly what was missing. A
second incomplete answer in the same arbitration escalates, as an unreadable ruling does: the
people decide, the pair never goes on from a ruling nobody can act on.
"""

from __future__ import annotations

from dataclasses import dataclass

from rooms.base.model import Ruling, Turn
from rooms.base.words import ARBITER, ESCALATE
from rooms.judge.verdicts import UNREADABLE_OPTIONS, check_ruling, unreadable

SENT_BACK = "sent back: "  # prefix of the `error` of an arbiter turn whose ruling was sent back
INCOMPLETE_TWICE = (
    "The arbiter's ruling was incomplete twice ({problem}), so the task waits for you. How "
    "should it go on?"
)


@dataclass(frozen=True)
class Checked:
    """What to do with an arbiter's answer: apply `ruling`, or send it back with `problem`."""

    ruling: Ruling | None
    problem: str | None = None


def check_answer(ruling: Ruling, text: str, *, sent_back_before: str | None) -> Checked:
    """`sent_back_before`: the problem of this arbitration's earlier answer, if it was sent back
    (None on a first answer)."""
    problem = check_ruling(ruling)
    if problem is None:
        return Checked(ruling)
    if sent_back_before is None:
        return Checked(None, problem)
    escalated = unreadable(text, INCOMPLETE_TWICE.format(problem=problem))
    if ruling.verdict == ESCALATE and ruling.question:
        # Its question stands; only the options it failed to give are the default ones.
        escalated = escalated.model_copy(
            update={"question": ruling.question, "options": list(UNREADABLE_OPTIONS)}
        )
    return Checked(escalated)


def send_back_note(problem: str) -> str:
    """The turn's recorded reason (`Turn.error`), read back by the next arbiter prompt."""
    return f"{SENT_BACK}{problem}"


def sent_back_problem(error: str | None) -> str | None:
    if error and error.startswith(SENT_BACK):
        return error[len(SENT_BACK) :]
    return None


def earlier_send_back(turns: list[Turn], seq: int | None = None) -> str | None:
    """The problem of the answer sent back right before turn `seq` (None: after every turn
    listed) in the same arbitration:
    the latest finished turn before it, when that is an arbiter turn that was sent back
    (failed and interrupted runs in between are not answers)."""
    for turn in reversed(turns):
        if (seq is not None and turn.seq >= seq) or turn.status != "done":
            continue
        return sent_back_problem(turn.error) if turn.role == ARBITER else None
    return None


def resend_prompt(problem: str) -> str:
    """The section of the fresh arbiter turn's prompt that names what was missing."""
    return "\n".join(
        [
            "## Your previous ruling was sent back",
            f"It could not be applied: {problem}.",
            "Rule again, complete this time: the verdict on the first line, then what it needs. "
            "A second incomplete ruling goes to the people in the room.",
        ]
    )
