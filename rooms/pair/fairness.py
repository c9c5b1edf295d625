"""The arbitration under way, read from the history (DESIGN §5): its arbiter turns so far, which
of them were sent back or were the swap check's first reading, how the sides are seated for the
next reading, and what the record says about the models.

One arbitration = the arbiter turns after the last finished owner or reviewer turn. A turn's
`error` (on a done turn) says why it did not end the arbitration: "sent back: …" (its ruling was
returned once, rooms/judge/sendback) or "swap check: first reading" (the positions are swapped
for a second reading)."""

from __future__ import annotations

from rooms.base.model import GroupPolicy, Turn
from rooms.base.words import ARBITER, OWNER, REVIEWER, WORK_ROLES
from rooms.judge.history import History
from rooms.judge.positions import FIRST_READING, Seating, cut_sides, positions_section, seat


def arbiter_turns(history: History) -> list[Turn]:
    """The finished arbiter turns of the arbitration under way, oldest first."""
    done = history.done
    last_work = max((t.seq for t in done if t.role in WORK_ROLES), default=0)
    return [t for t in done if t.role == ARBITER and t.seq > last_work]


def first_reading(history: History) -> Turn | None:
    """The swap check's first reading in this arbitration, if one was made."""
    return next((t for t in arbiter_turns(history) if t.error == FIRST_READING), None)


def seating(history: History, seed: int) -> Seating:
    """How the sides sit for the next reading: seeded, swapped after a first reading."""
    base = seat(seed)
    return base.swapped() if first_reading(history) is not None else base


def latest_words(history: History, role: str) -> str:
    for turn in reversed(history.done):
        if turn.role == role:
            return turn.output
    return ""


def positions(history: History, seats: Seating) -> str:
    return positions_section(latest_words(history, OWNER), latest_words(history, REVIEWER), seats)


def cut(history: History) -> dict[str, int]:
    """The sides whose latest words were cut to the budget in the arbiter's prompt (their
    length before the cut)."""
    return cut_sides(latest_words(history, OWNER), latest_words(history, REVIEWER))


def model_note(policy: GroupPolicy) -> str:
    """What the record says about the arbiter's model against the two sides'."""

    def name(role: str) -> str:
        cfg = policy.agent_for(role)
        return f"{cfg.agent}:{cfg.model or 'default'}"

    same = [r for r in WORK_ROLES if name(r) == name(ARBITER)]
    if not same:
        return f"the arbiter ({name(ARBITER)}) runs another model than the owner and the reviewer"
    why = (
        "allowed by the group (arbiter.allow_same_model)"
        if policy.allow_same_model
        else "both are the agent's default model"
    )
    return f"the arbiter shares its model ({name(ARBITER)}) with the {' and '.join(same)}: {why}"
