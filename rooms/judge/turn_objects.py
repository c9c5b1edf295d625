"""The owner's and the reviewer's structured turns (DESIGN §3 "Structured turns"): their JSON
schemas, defined once beside the ruling's (rooms/judge/verdicts.py), and reading a turn's marker
from its object, or from its text when there is no valid object.

Every owner and reviewer turn asks its runner for its role's object. The object is validated by
its pydantic model at this boundary; a missing or invalid one falls back to the text markers
(rooms/base/markers.py), and the reading says which (`source`: object / text), so the fallback
is stored with the turn and can be counted. When in doubt, not approved: a reviewer's APPROVED
with any condition, or with a finding of its own list still open, reads CHANGES_REQUESTED.

A reading also says why it is not what the turn's first marker says (`doubt`, stored with the
turn as `marker_doubt` and counted by `tribunal replay --json` and the status): from the text,
the marker parser's "conflicting", "qualified" or "uncertain" (rooms/base/markers.py); from an
object, "conditions" or "open_findings".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rooms.base.markers import read_marker
from rooms.base.words import (
    APPROVED,
    CHANGES_REQUESTED,
    OWNER,
    REVIEWER,
    OwnerMarker,
    ReviewerMarker,
    Role,
)
from rooms.judge.structured import StructuredError, read_object, strict_schema

OBJECT: Literal["object"] = "object"
TEXT: Literal["text"] = "text"
Source = Literal["object", "text"]
FindingStatus = Literal["open", "resolved", "withdrawn"]
OPEN: FindingStatus = "open"
# Why an object's APPROVED is not taken (the text path's doubts are the marker parser's).
CONDITIONS = "conditions"  # it lists conditions: it depends on something not yet done
# It leaves a finding of its own list open. A finding it leaves out is not counted: an approval
# with an empty list is the reviewer's word on the whole, and counting the ledger's left-out
# findings would send a model that approves that way round after round to the round cap.
OPEN_FINDINGS = "open_findings"
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
    verdict: ReviewerMarker
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
    status: OwnerMarker
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
    doubt: str | None = None  # why the marker is not the turn's own first one (see above)

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
        text = read_marker(output, role)
        return TurnReading(text.marker, TEXT, problem=str(exc), doubt=text.doubt)
    if isinstance(obj, OwnerTurn):
        return TurnReading(obj.status, OBJECT, obj)
    doubt = _approval_doubt(obj)
    return TurnReading(CHANGES_REQUESTED if doubt else obj.verdict, OBJECT, obj, doubt=doubt)


def _approval_doubt(review: ReviewerTurn) -> str | None:
    """Why a reviewer object's APPROVED is not an approval: it depends on something not yet
    done (a condition), or it leaves one of its own findings open. None otherwise."""
    if review.verdict != APPROVED:
        return None
    if any(c.strip() for c in review.conditions):
        return CONDITIONS
    if any(f.status == OPEN for f in review.findings):
        return OPEN_FINDINGS
    return None
