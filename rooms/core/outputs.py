"""What every kind of turn ends with, in any protocol: the turn's record and its posts."""

from __future__ import annotations

from typing import Any, Literal

from rooms.base.model import RoomRef, Turn
from rooms.base.records import OutboxDraft, TurnEnd
from rooms.core.turns import RunOutcome

POST_LIMIT = 30_000  # characters posted from one output; platforms split, the store keeps all


def turn_end(
    turn: Turn,
    run: RunOutcome,
    now: float,
    *,
    marker: str | None = None,
    unmarked: bool = False,
    tree: str | None = None,
    source: str | None = None,
    doubt: str | None = None,
    structured: dict[str, Any] | None = None,
    output: str | None = None,
) -> TurnEnd:
    """`structured`: the object to store instead of the runner's (the engine's numbering of a
    reviewer's findings); `output`: the text to store instead of the runner's (a structured
    turn's prose); `source`: where the marker was read from; `doubt`: why it is not the
    turn's own first marker (rooms/judge/turn_objects.py)."""
    status: Literal["done", "failed"] = "failed" if run.failed else "done"
    code, error = run.failure() if run.failed else (None, None)
    return TurnEnd(
        turn_id=turn.id,
        status=status,
        ended_at=now,
        output=run.output if output is None else output,
        structured=structured if structured is not None else run.structured,
        marker=marker,
        unmarked=unmarked,
        marker_source=source,
        marker_doubt=doubt,
        error_code=code,
        error=error,
        tree=tree,
        session_id=run.session_id,
        usage=run.usage,
    )


def post(
    room: RoomRef, turn: Turn, text: str, *, key: str = "output", persona: str | None = None
) -> OutboxDraft:
    """A message about `turn`; its key makes it unique, so re-applying never posts it twice."""
    if len(text) > POST_LIMIT:
        text = text[:POST_LIMIT] + "\n[… cut; the full output is stored with the task]"
    return OutboxDraft(
        f"turn:{turn.id}:{key}", room, text or "(no output)", persona=persona or turn.role
    )
