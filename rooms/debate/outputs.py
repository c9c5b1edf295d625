"""What the debate's actors hand back, checked at the boundary (pydantic), and their strict
schemas: the frame each side accepts, the two opening briefs (the seed's two templates), the
cross-examination questions and answers, and the referee's report."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rooms.debate.limits import SCORE_MAX
from rooms.judge.structured import strict_schema

_TEXT = 20_000  # characters of one free-text field; more is cut at the boundary


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    @field_validator("*", mode="before")
    @classmethod
    def _cut_text(cls, value: object) -> object:
        return value[:_TEXT] if isinstance(value, str) else value


class Frame(_Out):
    decision: str = ""  # what is being decided, in one sentence
    shared_data: str = ""  # what both sides may use
    horizon: str = ""  # over what time the outcome is judged
    reversibility: str = ""  # how much can be unwound, at what cost
    authority: str = ""  # who decides after the debate


class FrameStatement(_Out):
    """A side's answer to the proposed frame: accepted as is, or the frame it would debate."""

    accept: bool
    frame: Frame = (
        Frame()
    )  # the side's frame when it does not accept (fields left empty: as proposed)
    objection: str = ""


class AdvocateBrief(_Out):
    position: str = ""
    thesis: str = ""  # why it matters, what changes
    base_case: str = ""  # the expected outcome, quantified
    upside_drivers: list[str] = Field(default_factory=list)
    downside: str = ""  # the honest worst case
    optionality: str = ""  # the moves it enables later
    execution_plan: str = ""  # phases, owners, milestones
    kill_criteria: list[str] = Field(default_factory=list)  # what stops it mid-way


class Guardrail(_Out):
    name: str = Field(min_length=1)
    status: Literal["pass", "fail", "margin"]
    note: str = ""


class ChallengerBrief(_Out):
    optimistic_assumptions: list[str] = Field(default_factory=list)  # 3–5, specific
    discipline_lens: str = ""  # what stressed numbers or risks show
    hidden_costs: list[str] = Field(default_factory=list)
    guardrails: list[Guardrail] = Field(default_factory=list)
    opportunity_cost: str = ""
    reversibility_cost: str = ""
    catastrophic_conditions: list[str] = Field(default_factory=list)


class Question(_Out):
    kind: Literal["assumption", "data_gap", "model_risk", "execution_dependency", "other"]
    text: str = Field(min_length=1)


class Questions(_Out):
    questions: list[Question]


class Answer(_Out):
    number: int = Field(ge=1)  # the question's number as shown (1, 2, …)
    text: str = Field(min_length=1)


class Answers(_Out):
    answers: list[Answer]


class CriterionScores(_Out):
    evidence: float = Field(ge=0, le=SCORE_MAX)
    logic: float = Field(ge=0, le=SCORE_MAX)
    counter_evidence: float = Field(ge=0, le=SCORE_MAX)
    quantification: float = Field(ge=0, le=SCORE_MAX)
    reversibility: float = Field(ge=0, le=SCORE_MAX)


class ResolvedTension(_Out):
    tension: str = Field(min_length=1)
    evidence: str = ""  # what settled it
    shared_position: str = ""


class UnresolvedTension(_Out):
    tension: str = Field(min_length=1)
    data_needed: str = ""  # what would settle it
    cost_to_obtain: str = ""


class Confidence(_Out):
    level: Literal["high", "medium", "low"]
    reason: str = ""

    @field_validator("level", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


class Option(_Out):
    option: str = Field(min_length=1)
    conditions: str = ""  # when to take it


class RefereeReport(_Out):
    advocate_scores: CriterionScores
    challenger_scores: CriterionScores
    agreement: list[str] = Field(default_factory=list)
    resolved: list[ResolvedTension] = Field(default_factory=list)
    unresolved: list[UnresolvedTension] = Field(default_factory=list)
    guardrails: list[Guardrail] = Field(default_factory=list)
    confidence: Confidence
    options: list[Option] = Field(default_factory=list)
    irreconcilable: bool = False  # the sides cannot be reconciled: the people decide


FRAME_SCHEMA = strict_schema(FrameStatement)
ADVOCATE_SCHEMA = strict_schema(AdvocateBrief)
CHALLENGER_SCHEMA = strict_schema(ChallengerBrief)
QUESTIONS_SCHEMA = strict_schema(Questions)
ANSWERS_SCHEMA = strict_schema(Answers)
REFEREE_SCHEMA = strict_schema(RefereeReport)
