"""The task's ceilings (DESIGN §4): turns, wall time, tokens and cost. Unlike the content
detectors, which read only the steps since the last human message or ruling, a ceiling counts the
whole task, so no ruling resets it; it fires first, and people decide whether the task gets
another budget. One definition for every protocol: the pair's `check` asks it first, and the
phased protocols ask it before each of their steps (rooms/phased/protocol.py).
"""

from __future__ import annotations

from rooms.base.model import Firing, Thresholds
from rooms.base.words import CEILING


def ceiling(
    t: Thresholds, *, turns: int, tokens: int, cost_usd: float, elapsed: float
) -> Firing | None:
    """The first ceiling the task has reached (its turns, its time running, its tokens, its
    cost), or None."""
    if turns >= t.max_turns:
        reason = f"the task has used {turns} turns, the limit is {t.max_turns}"
        return _firing("turns", reason)
    if elapsed >= t.max_wall_s:
        ran, limit = duration_words(elapsed), duration_words(t.max_wall_s)
        reason = f"the task has run for {ran}, the limit is {limit}"
        return _firing("wall_time", reason)
    if tokens >= t.max_tokens:
        reason = f"the task has used {tokens:,} tokens, the limit is {t.max_tokens:,}"
        return _firing("tokens", reason)
    if cost_usd >= t.max_cost_usd:
        reason = f"the task has cost ${cost_usd:.2f}, the limit is ${t.max_cost_usd:.2f}"
        return _firing("cost", reason)
    return None


def _firing(limit: str, reason: str) -> Firing:
    return Firing(detector=CEILING, reason=reason, extra={"limit": limit})


def duration_words(seconds: float) -> str:
    """A span of time as the room reads it: "45 s", "12 min", "2 h 5 min"."""
    minutes = int(seconds // 60)
    if minutes >= 60:
        return f"{minutes // 60} h {minutes % 60} min"
    return f"{minutes} min" if minutes else f"{int(seconds)} s"
