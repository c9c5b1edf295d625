"""The owner's and the reviewer's structured turns (DESIGN §3 "Structured turns"): their JSON
schemas, defined once beside the ruling's (rooms/judge/verdicts.py), and reading a turn's marker
from its object, or from its text when there is no valid object.

Every owner and reviewer turn asks its runner for its role's object. The object is validated by
its pydantic model at this boundary; a missing or invalid one falls back to the text markers
(rooms/base/markers.py), and the reading says which (`source`: object / text), so the fallback
is stored with the turn and can be counted. When in doubt, not approved: a reviewer's APPROVED
with any condition reads CHANGES_REQUESTED.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rooms.base.markers import find_marker
from rooms.base.words import APPROVED, CHANGES_REQUESTED, OWNER, REVIEWER, Role
from rooms.judge.structured import StructuredError, read_object, strict_schema

OBJECT: Literal["object"] = "object"
TEXT: Literal["text"] = "text"
Source = Literal["object", "text"]
FindingStatus = Literal["open", "resolved", "withdrawn"]
OPEN: FindingStatus = "open"
_TEXT_CHARS = 4000  # one finding's text or one dispute's evidence; longer is cut, not refused


class _Object(BaseModel):
    # Extra keys are ignored (a runner without a strict schema may add some); types must match.
    model_config = ConfigDict(extra="ignore")


class Finding(_Object):
    id: str = Field(
        description="the finding's id as listed under Open findings (F1, F2, …); "
        "empty for a new finding: the engine numbers it"
    )
    status: FindingStatus = Field(description="open, resolved or withdrawn")
    where: str = Field(description="file:line or the area it concerns")
    text: str = Field(description="what is wrong and what would fix it")


class ReviewerTurn(_Object):
    verdict: Literal["APPROVED", "CHANGES_REQUESTED", "NEEDS_CONTEXT", "BLOCKED"]
    conditions: list[str] = Field(
        description="anything the approval depends on that is not done yet; "
        "any condition means the work is not approved"
    )
    findings: list[Finding] = Field(
        description="first the status of every open finding listed to you, by its id; "
        "then any new finding, with an empty id"
    )
    prose: str = Field(description="your review as the people in the thread should read it")


class Dispute(_Object):
    id: str = Field(description="the id of the finding you dispute")
    evidence: str = Field(description="why it is not a defect: a test, a command's output, code")


class OwnerTurn(_Object):
    status: Literal["DONE", "NEEDS_CONTEXT", "BLOCKED"]
    addressed: list[str] = Field(description="ids of the open findings you fixed")
    disputed: list[Dispute] = Field(description="open findings you do not agree with")
    prose: str = Field(description="what you did, as the people in the thread should read it")


REVIEWER_SCHEMA: dict[str, Any] = strict_schema(ReviewerTurn)
OWNER_SCHEMA: dict[str, Any] = strict_schema(OwnerTurn)
_MODELS: dict[str, type[ReviewerTurn] | type[OwnerTurn]] = {
    OWNER: OwnerTurn,
    REVIEWER: ReviewerTurn,
}


def schema_for(role: str) -> dict[str, Any] | None:
    """The output schema an owner's or reviewer's turn asks for; None for any other role."""
    if role == OWNER:
        return OWNER_SCHEMA
    if role == REVIEWER:
        return REVIEWER_SCHEMA
    return None


@dataclass(frozen=True)
class TurnReading:
    """What an owner's or reviewer's turn said: its marker (None: no marker in the text, the
    caller counts it as unmarked), where the marker came from, and the validated object."""

    marker: str | None
    source: Source
    turn: ReviewerTurn | OwnerTurn | None = None
    problem: str = ""  # why there was no valid object, when the text was read instead

    @property
    def prose(self) -> str | None:
        return self.turn.prose if self.turn is not None else None


def read_turn(role: Role, output: str, structured: dict[str, Any] | None) -> TurnReading:
    """The turn's object when it has a valid one (the runner's structured output, or an object
    printed as JSON), else the marker line of its text."""
    model = _MODELS[role]
    try:
        obj = read_object(output, structured, model)
    except StructuredError as exc:
        return TurnReading(find_marker(output, role), TEXT, problem=str(exc))
    return TurnReading(_marker(obj), OBJECT, obj)


def _marker(obj: ReviewerTurn | OwnerTurn) -> str:
    if isinstance(obj, OwnerTurn):
        return obj.status
    if obj.verdict == APPROVED and any(c.strip() for c in obj.conditions):
        return CHANGES_REQUESTED  # an approval that depends on something not yet done
    return obj.verdict
