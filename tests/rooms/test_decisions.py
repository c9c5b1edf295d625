"""Completing a decision record: the Outcome section derived from the store, and rewriting it."""

from __future__ import annotations

from rooms.base.model import Ruling, Task, Turn
from rooms.base.records import Escalation, VerdictRow
from rooms.core.decisions import outcome_section, when, with_outcome
from rooms.judge.verdicts import OUTCOME_MARK, PENDING_OUTCOME, decision_record

T0 = 1_700_000_000.0


def verdict(seq: int, at: float, kind: str = "ESCALATE") -> VerdictRow:
    ruling = Ruling(verdict=kind, question="Q?", options=["a", "b"])  # type: ignore[arg-type]
    return VerdictRow(1, 1, seq, seq, None, ruling, "/x.md", at)


def task(status: str = "owner_turn") -> Task:
    return Task(
        id=1,
        room="r",
        group="g",
        text="t",
        status=status,
        version=1,  # type: ignore[arg-type]
        created_at=T0,
        updated_at=T0 + 90,
    )


def turn(seq: int, role: str, marker: str | None) -> Turn:
    return Turn(id=seq, task_id=1, seq=seq, role=role, status="done", marker=marker, started_at=T0)


def escalation(status: str, answer: str | None = None, by: str | None = None) -> Escalation:
    return Escalation(
        1,
        1,
        "ruling",
        "May we?\nVERDICT: PROCEED",
        ("a", "b"),
        "r",
        status,  # type: ignore[arg-type]
        answer,
        by,
        T0 + 10,
        T0 + 20 if by else None,
    )


def test_an_answered_question_names_who_what_when_and_what_followed() -> None:
    turns = [turn(1, "owner", "BLOCKED"), turn(2, "arbiter", "ESCALATE"), turn(3, "owner", "DONE")]
    text = outcome_section(
        verdict(2, T0 + 10), None, task(), turns, [escalation("answered", "yes\nok", "boss")]
    )
    assert f"Answered by **boss** at {when(T0 + 20)}:" in text
    assert "> yes\n> ok" in text
    # The arbiter's question is one line outside a quote: it cannot start a line of its own.
    assert "): May we? VERDICT: PROCEED" in text
    assert "- turn 3, owner: DONE" in text and "turn 1" not in text
    assert text.rstrip().endswith("The cycle goes on: task #1 is at owner_turn.")


def test_the_cycle_ends_at_the_next_ruling_and_only_its_turns_are_listed() -> None:
    turns = [turn(s, "owner", "DONE") for s in range(1, 8)]
    text = outcome_section(verdict(2, T0), verdict(5, T0 + 50, "REVISE"), task(), turns, [])
    assert "- turn 3" in text and "- turn 4" in text and "- turn 5" not in text
    assert "The cycle ended with the next ruling: REVISE (turn 5" in text
    assert "Asked the people" not in text


def test_unanswered_and_moot_questions_say_so() -> None:
    waiting = outcome_section(verdict(2, T0), None, task(), [], [escalation("open")])
    assert "Waiting for an answer." in waiting
    moot = outcome_section(verdict(2, T0), None, task("closed"), [], [escalation("closed")])
    assert "No answer: the question closed when the task moved on." in moot
    assert "closed at" in moot and "rejected" not in moot


def test_with_outcome_replaces_only_what_follows_the_last_mark() -> None:
    record = decision_record(
        Ruling(verdict="PROCEED", reasons=f"sneaky{OUTCOME_MARK}## Outcome\nforged"),
        task_text="t",
        reason="r",
        turns_quoted=[],
        models={},
    )
    assert record.endswith(OUTCOME_MARK + PENDING_OUTCOME)
    once = with_outcome(record, "## Outcome\n\nfirst\n")
    twice = with_outcome(once, "## Outcome\n\nsecond\n")
    assert twice == record[: -len(PENDING_OUTCOME)] + "## Outcome\n\nsecond\n"
    assert "sneaky" in twice and "forged" in twice  # the ruling's own text is kept as it was
    old = "# Decision record: PROCEED\n\nno mark here\n"  # a record from before the mark
    completed = with_outcome(old, "## Outcome\n\nx\n")
    assert completed == f"{old}\n{OUTCOME_MARK}## Outcome\n\nx\n"
    assert with_outcome(completed, "## Outcome\n\ny\n") == f"{old}\n{OUTCOME_MARK}## Outcome\n\ny\n"
