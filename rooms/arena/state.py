"""An arena run's stored state: the panel, the briefing, every message, and the moderator's
bookkeeping (nudges, final call, veto, commentary gate)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rooms.arena.outputs import ExpertMessage, SynthesisNarrative

Phase = Literal["panel", "research", "debate", "synthesis", "done", "failed"]
VetoState = Literal["none", "standing", "withdrawn"]


class Seat(BaseModel):
    """One expert on the panel and where they stand."""

    slug: str
    name: str
    angle: str
    persona: str
    expected: str = ""
    devil: bool = False
    nudges: int = 0
    out: bool = False
    out_reason: str = ""
    stance: str = ""
    final: ExpertMessage | None = None
    last: ExpertMessage | None = None  # their last message that was not a pass


class Spoken(BaseModel):
    """One message of the debate, as the thread and the synthesis see it."""

    round: int
    speaker: str
    to: list[str] = Field(default_factory=list)
    message: ExpertMessage


class Contest(BaseModel):
    evidence: str
    by: str
    r: float
    cl: float
    why: str = ""


class ArenaState(BaseModel):
    phase: Phase = "panel"
    question: str
    topic: str = ""
    code_question: bool = False
    seats: list[Seat] = Field(default_factory=list)
    researchers: list[str] = Field(default_factory=list)  # their focus
    findings: dict[str, str] = Field(default_factory=dict)  # researcher key → findings
    research_failed: list[str] = Field(default_factory=list)
    briefing: str = ""
    round: int = 0  # debate rounds completed
    said: list[list[tuple[str, list[str], bool, bool]]] = Field(default_factory=list)
    thread: list[Spoken] = Field(default_factory=list)
    notes: dict[str, list[str]] = Field(default_factory=dict)  # slug → moderator notes pending
    started_at: float = 0.0  # when the debate began
    final_called: bool = False
    veto: VetoState = "none"
    veto_reason: str = ""
    veto_put: bool = False
    veto_round: bool = False  # the next round asks everyone, finals included, to answer the veto
    arbitrated: list[tuple[str, str]] = Field(default_factory=list)
    contests: list[Contest] = Field(default_factory=list)
    posted_at: list[float] = Field(default_factory=list)  # commentary gate
    held: int = 0
    ended_because: str = ""
    dissent: str = ""
    narrative: SynthesisNarrative | None = None
    attempts: dict[str, int] = Field(default_factory=dict)
    problems: dict[str, str] = Field(default_factory=dict)
    failure: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    participants: list[str] = Field(default_factory=list)
    expert_tokens: list[list[int]] = Field(default_factory=list)  # per round, per expert turn

    def seat(self, slug: str) -> Seat | None:
        return next((s for s in self.seats if s.slug == slug), None)

    def active(self) -> list[Seat]:
        return [s for s in self.seats if not s.out]
