"""Live commentary in the room: significant events only, and rate-limited.

A comment goes out for a significant event (a shift of position, a contested rating, a veto, an
expert left out, an arbitration, a final position) when the last comment is at least
`commentary_interval_s` old and fewer than `commentary_per_window` went out in the last
`commentary_window_s`. Events held back are counted and mentioned in the next comment, so the
room knows it missed some without being flooded.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from rooms.arena.limits import ArenaLimits

EventKind = Literal[
    "message",
    "shift",
    "rating_contested",
    "veto",
    "veto_withdrawn",
    "left_out",
    "arbitration",
    "final",
]
SIGNIFICANT: frozenset[str] = frozenset(
    {"shift", "rating_contested", "veto", "veto_withdrawn", "left_out", "arbitration", "final"}
)


@dataclass(frozen=True)
class Gate:
    """The limiter's state: when comments went out, and how many events were held back."""

    posted_at: tuple[float, ...] = ()
    held: int = 0


@dataclass(frozen=True)
class Verdict:
    post: bool
    gate: Gate
    held_before: int = 0  # events held back since the last comment (post only)


def offer(gate: Gate, kind: str, now: float, limits: ArenaLimits) -> Verdict:
    """Whether a comment on an event of `kind` goes out at `now`, and the gate after it."""
    if kind not in SIGNIFICANT:
        return Verdict(False, gate)
    window_start = now - limits.commentary_window_s
    recent = tuple(t for t in gate.posted_at if t > window_start)
    too_soon = bool(recent) and now - recent[-1] < limits.commentary_interval_s
    if too_soon or len(recent) >= limits.commentary_per_window:
        return Verdict(False, replace(gate, posted_at=recent, held=gate.held + 1))
    return Verdict(True, Gate(posted_at=(*recent, now), held=0), held_before=gate.held)
