"""The frame both sides must agree on before the briefs: what is decided, on what data, over
what horizon, how reversibly, and who decides. A disagreement on the frame is itself a finding:
it is reported with each side's version of every field they differ on."""

from __future__ import annotations

from dataclasses import dataclass

from rooms.debate.outputs import Frame, FrameStatement

FRAME_FIELDS = ("decision", "shared_data", "horizon", "reversibility", "authority")
FRAME_LABELS = {
    "decision": "Decision",
    "shared_data": "Shared data",
    "horizon": "Time horizon",
    "reversibility": "Reversibility",
    "authority": "Decision authority",
}


@dataclass(frozen=True)
class FrameDifference:
    field: str
    advocate: str
    challenger: str


@dataclass(frozen=True)
class FrameCheck:
    agreed: bool
    frame: Frame  # the agreed frame; on disagreement, the proposed one
    differences: tuple[FrameDifference, ...] = ()
    objections: tuple[tuple[str, str], ...] = ()  # (side, objection)


def frame_gaps(frame: Frame) -> list[str]:
    """What a frame lacks. Without a decision sentence there is nothing to debate."""
    return [FRAME_LABELS[name] for name in FRAME_FIELDS if not getattr(frame, name).strip()]


def side_frame(proposed: Frame, statement: FrameStatement) -> Frame:
    """The frame a side would debate: the proposed one, with the fields it changed."""
    if statement.accept:
        return proposed
    changed = {n: v for n, v in statement.frame.model_dump().items() if str(v).strip()}
    return proposed.model_copy(update=changed)


def check_frame(
    proposed: Frame, advocate: FrameStatement, challenger: FrameStatement
) -> FrameCheck:
    a, c = side_frame(proposed, advocate), side_frame(proposed, challenger)
    objections = tuple(
        (side, s.objection)
        for side, s in (("advocate", advocate), ("challenger", challenger))
        if not s.accept and s.objection
    )
    differences = tuple(
        FrameDifference(name, getattr(a, name), getattr(c, name))
        for name in FRAME_FIELDS
        if _norm(getattr(a, name)) != _norm(getattr(c, name))
    )
    if differences:
        return FrameCheck(False, proposed, differences, objections)
    return FrameCheck(True, a, (), objections)


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!;:")
