"""The send-back rule as a table: what a ruling lacks goes back once, a second time escalates."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from rooms.base.model import Ruling, Turn
from rooms.judge.sendback import (
    INCOMPLETE_TWICE,
    check_answer,
    earlier_send_back,
    resend_prompt,
    send_back_note,
    sent_back_problem,
)
from rooms.judge.verdicts import UNREADABLE_OPTIONS, check_ruling

REVISE_NEEDS = "a REVISE needs concrete conditions"
RESET_NEEDS = "a RESET needs a new direction"
ESCALATE_NEEDS = "an ESCALATE needs"

# (ruling fields, sent back before?, outcome): "apply", "send back: <problem start>",
# or "escalate: <question start>".
CASES: list[tuple[dict[str, Any], bool, str]] = [
    ({"verdict": "PROCEED"}, False, "apply"),
    ({"verdict": "PROCEED"}, True, "apply"),  # PROCEED needs nothing more
    ({"verdict": "REVISE", "conditions": ["add a test"]}, False, "apply"),
    ({"verdict": "REVISE"}, False, f"send back: {REVISE_NEEDS}"),
    ({"verdict": "REVISE", "reasons": "fix it"}, False, f"send back: {REVISE_NEEDS}"),
    ({"verdict": "REVISE"}, True, "escalate: The arbiter's ruling was incomplete twice"),
    ({"verdict": "REVISE", "conditions": ["x"]}, True, "apply"),  # fixed on the second try
    ({"verdict": "RESET", "new_direction": "use sqlite"}, False, "apply"),
    ({"verdict": "RESET", "new_direction": "  "}, False, f"send back: {RESET_NEEDS}"),
    ({"verdict": "RESET"}, True, "escalate: The arbiter's ruling was incomplete twice"),
    ({"verdict": "ESCALATE", "question": "Q?", "options": ["a", "b"]}, False, "apply"),
    ({"verdict": "ESCALATE", "question": "Q?", "options": ["a"] * 4}, False, "apply"),
    ({"verdict": "ESCALATE", "question": "Q?"}, False, f"send back: {ESCALATE_NEEDS} 2 to 4"),
    ({"verdict": "ESCALATE", "question": "Q?", "options": ["a"]}, False, "send back: an ESC"),
    ({"verdict": "ESCALATE", "question": "Q?", "options": ["a"] * 5}, False, "send back: an ESC"),
    (
        {"verdict": "ESCALATE", "options": ["a", "b"]},
        False,
        f"send back: {ESCALATE_NEEDS} the question",
    ),
    ({"verdict": "ESCALATE", "question": "Q?"}, True, "escalate: Q?"),  # its question stands
    ({"verdict": "ESCALATE"}, True, "escalate: The arbiter's ruling was incomplete twice"),
    # Unreadable rulings are not sent back: they escalate as they are.
    ({"verdict": "ESCALATE", "readable": False}, False, "apply"),
]


@pytest.mark.parametrize(("fields", "before", "outcome"), CASES)
def test_send_back_table(fields: dict[str, Any], before: bool, outcome: str) -> None:
    ruling = Ruling(**fields)
    checked = check_answer(ruling, "VERDICT: x", sent_back_before="earlier" if before else None)
    kind, _, detail = outcome.partition(": ")
    if kind == "apply":
        assert (checked.ruling, checked.problem) == (ruling, None)
    elif kind == "send back":
        assert checked.ruling is None
        assert checked.problem is not None and checked.problem.startswith(detail)
        assert checked.problem == check_ruling(ruling)
    else:
        assert checked.ruling is not None and checked.problem is None
        escalated = checked.ruling
        assert (escalated.verdict, escalated.readable) == ("ESCALATE", False)
        assert escalated.question.startswith(detail)
        assert escalated.options == UNREADABLE_OPTIONS
        if detail.startswith("The arbiter"):
            problem = check_ruling(ruling)
            assert escalated.question == INCOMPLETE_TWICE.format(problem=problem)


Status = Literal["running", "done", "failed", "interrupted"]


def turn(seq: int, role: str, status: Status = "done", error: str | None = None) -> Turn:
    return Turn(id=seq, task_id=1, seq=seq, role=role, status=status, error=error, started_at=0)


SENT = send_back_note("a RESET needs a new direction")
EARLIER = [
    ([], None),
    ([turn(1, "owner")], None),
    ([turn(1, "owner"), turn(2, "arbiter")], None),  # a ruling, not a send-back
    ([turn(1, "owner"), turn(2, "arbiter", error=SENT)], "a RESET needs a new direction"),
    # A failed retry in between is no answer; the send-back before it still counts.
    (
        [turn(1, "owner"), turn(2, "arbiter", error=SENT), turn(3, "arbiter", "failed", "x")],
        "a RESET needs a new direction",
    ),
    # A later owner turn ends that arbitration: a new one starts afresh.
    ([turn(2, "arbiter", error=SENT), turn(3, "owner")], None),
    # A failed turn whose error happens to start like a note is not a send-back.
    ([turn(2, "arbiter", "failed", SENT)], None),
]


@pytest.mark.parametrize(("turns", "expected"), EARLIER)
def test_earlier_send_back_table(turns: list[Turn], expected: str | None) -> None:
    assert earlier_send_back(turns) == expected
    assert earlier_send_back([*turns, turn(99, "arbiter", "running")], 99) == expected


def test_the_note_round_trips_and_the_prompt_names_the_problem() -> None:
    assert sent_back_problem(send_back_note("p")) == "p"
    assert sent_back_problem("interrupted: x") is None and sent_back_problem(None) is None
    assert "It could not be applied: a REVISE needs x." in resend_prompt("a REVISE needs x")
