"""A debate run's stored state: the phase it is in, and everything the actors said so far."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rooms.debate.outputs import (
    AdvocateBrief,
    Answer,
    ChallengerBrief,
    Frame,
    FrameStatement,
    Question,
    RefereeReport,
)

Phase = Literal["frame", "briefs", "questions", "answers", "referee", "done", "failed"]


class DebateState(BaseModel):
    phase: Phase = "frame"
    decision: str
    proposed: Frame
    frames: dict[str, FrameStatement] = Field(default_factory=dict)  # side → its statement
    advocate: AdvocateBrief | None = None
    challenger: ChallengerBrief | None = None
    questions: dict[str, list[Question]] = Field(default_factory=dict)  # asked by side
    answers: dict[str, list[Answer]] = Field(default_factory=dict)  # given by side
    report: RefereeReport | None = None
    report_gaps: list[str] = Field(default_factory=list)
    attempts: dict[str, int] = Field(default_factory=dict)  # actor key → failed attempts
    problems: dict[str, str] = Field(default_factory=dict)  # actor key → why it is asked again
    failure: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    participants: list[str] = Field(default_factory=list)
