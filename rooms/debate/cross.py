"""One round of cross-examination: each side asks up to `questions_per_side` questions, and each
question gets one answer — no follow-ups (repeating steps is the failure mode this prevents).
Questions beyond the limit are deferred and reported, never silently dropped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rooms.debate.outputs import Answer, Question


@dataclass(frozen=True)
class Exchange:
    number: int  # 1, 2, … as the answering side was shown them
    question: Question
    answer: str | None  # None: not answered


@dataclass(frozen=True)
class CrossRound:
    exchanges: tuple[Exchange, ...]
    deferred: tuple[Question, ...]  # asked beyond the limit


def asked(questions: Sequence[Question], limit: int) -> CrossRound:
    """The questions that will be put to the other side, numbered, and those deferred."""
    kept = tuple(Exchange(i, q, None) for i, q in enumerate(questions[:limit], start=1))
    return CrossRound(kept, tuple(questions[limit:]))


def answered(round_: CrossRound, answers: Sequence[Answer]) -> CrossRound:
    """The round with its answers: one per question (the first one given); answers to numbers
    that were not asked are ignored."""
    by_number: dict[int, str] = {}
    for a in answers:
        by_number.setdefault(a.number, a.text)
    return CrossRound(
        tuple(Exchange(e.number, e.question, by_number.get(e.number)) for e in round_.exchanges),
        round_.deferred,
    )
