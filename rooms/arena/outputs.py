"""What the arena's actors hand back, checked at the boundary (pydantic), and their strict
schemas for runners that enforce structured output.

- the moderator's panel: 3–5 expert personas (one devil's advocate) and 2–4 research briefs;
- an expert's message: what kind, to whom, the stance, the evidence with R/CL, challenges to
  others (each naming a weakness, optionally contesting a rating), the veto;
- the synthesizer's narrative: the parts of the synthesis that need judgment.

Scores, trust and levels are never taken from an actor: they are computed (rooms.arena.evidence).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rooms.base.words import OWNER, REVIEWER
from rooms.judge.structured import strict_schema

SLUG = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
SLUG_MAX = 40
RESERVED_SLUGS = frozenset({"moderator", "tribunal", "everyone", "all", OWNER, REVIEWER})
_TEXT = 20_000  # characters of one free-text field; more is cut at the boundary, not refused


def _cut(value: object) -> object:
    return value[:_TEXT] if isinstance(value, str) else value


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    @field_validator("*", mode="before")
    @classmethod
    def _cut_text(cls, value: object) -> object:
        return _cut(value)


class ExpertPersona(_Out):
    slug: str = Field(min_length=2, max_length=SLUG_MAX)
    name: str = Field(min_length=1, max_length=120)
    angle: str = Field(min_length=1)
    persona: str = Field(min_length=1)
    expected_position: str = ""
    devil_advocate: bool = False

    @field_validator("slug")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not SLUG.match(value) or value in RESERVED_SLUGS:
            raise ValueError("lowercase words joined by hyphens, not a reserved name")
        return value


class ResearchBrief(_Out):
    focus: str = Field(min_length=1)


class PanelProposal(_Out):
    topic: str = Field(min_length=1, max_length=200)  # a few words, for the synthesis file name
    code_question: bool = False  # researchers read the workspace
    experts: list[ExpertPersona]
    researchers: list[ResearchBrief]


class Citation(_Out):
    title: str = Field(min_length=1)
    source: str = ""
    r: float = Field(ge=0.0, le=1.0)
    cl: float = Field(ge=0.0, le=1.0)
    load_bearing: bool = True


class Challenge(_Out):
    target: str  # the expert challenged, by slug
    weakness: str = Field(min_length=1)  # what is wrong with their argument or evidence
    evidence: str = ""  # the title of the evidence whose rating is contested, if any
    r: float | None = Field(default=None, ge=0.0, le=1.0)  # the rating the challenger proposes
    cl: float | None = Field(default=None, ge=0.0, le=1.0)


class ExpertMessage(_Out):
    kind: Literal["position", "challenge", "response", "final", "pass"]
    to: list[str] = Field(default_factory=list)  # slugs addressed; empty: everyone
    stance: str = ""  # the expert's position in one sentence, as it stands now
    shifted: bool = False  # this message changes the expert's position
    text: str = ""
    evidence: list[Citation] = Field(default_factory=list)
    challenges: list[Challenge] = Field(default_factory=list)
    veto: Literal["none", "raise", "withdraw"] = "none"  # the devil's advocate only
    veto_reason: str = ""


class ContestResolution(_Out):
    evidence: str  # the title of the contested evidence
    chosen: str  # the slug of the expert whose rating is better justified
    why: str = ""


class SynthesisNarrative(_Out):
    status: Literal["consensus", "partial", "none"]
    verdict: str = Field(min_length=1)
    recommendation: str = Field(min_length=1)
    progression: list[str] = Field(default_factory=list)  # key moments, in order
    remaining_disagreements: list[str] = Field(default_factory=list)
    trade_offs: list[str] = Field(default_factory=list)
    contested: list[ContestResolution] = Field(default_factory=list)


PANEL_SCHEMA = strict_schema(PanelProposal)
EXPERT_SCHEMA = strict_schema(ExpertMessage)
SYNTHESIS_SCHEMA = strict_schema(SynthesisNarrative)
