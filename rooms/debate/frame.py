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
    """A field left open in the proposal and stated by one side only is adopted; the sides
    disagree where both state it differently, or one changes what the other kept."""
    a, c = side_frame(proposed, advocate), side_frame(proposed, challenger)
    objections = tuple(
        (side, s.objection)
        for side, s in (("advocate", advocate), ("challenger", challenger))
        if not s.accept and s.objection
    )
    agreed: dict[str, str] = {}
    differences = []
    for name in FRAME_FIELDS:
        va, vc = getattr(a, name), getattr(c, name)
        if _norm(va) == _norm(vc):
            agreed[name] = va
        elif not getattr(proposed, name).strip() and not (va.strip() and vc.strip()):
            agreed[name] = va or vc
        else:
            differences.append(FrameDifference(name, va, vc))
    if differences:
        return FrameCheck(False, proposed, tuple(differences), objections)
    return FrameCheck(True, Frame(**agreed), (), objections)


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!;:")
