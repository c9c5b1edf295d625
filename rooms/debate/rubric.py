"""The referee's weighted rubric: per-criterion scores → a total out of 100 → the preferred
side. The referee scores; the decision is computed, and a tie goes to the cautious side."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rooms.debate.limits import CRITERIA, SCORE_MAX, DebateLimits, Side


class ScoreError(ValueError):
    """Scores that do not fit the rubric."""


@dataclass(frozen=True)
class Outcome:
    preferred: Side
    totals: dict[str, float]  # side → weighted total out of 100
    tie: bool
    reason: str


def total(scores: Mapping[str, float], limits: DebateLimits) -> float:
    """The weighted total out of 100 of one side's criterion scores (each 0–SCORE_MAX)."""
    if set(scores) != set(CRITERIA):
        raise ScoreError("scores must name exactly: " + ", ".join(CRITERIA))
    for name, value in scores.items():
        if not 0 <= value <= SCORE_MAX:  # also refuses NaN
            raise ScoreError(f"{name} must be scored 0–{SCORE_MAX}, not {value}")
    return round(sum(limits.weights[c] * scores[c] / SCORE_MAX for c in CRITERIA), 2)


def adjudicate(
    advocate: Mapping[str, float], challenger: Mapping[str, float], limits: DebateLimits
) -> Outcome:
    totals = {"advocate": total(advocate, limits), "challenger": total(challenger, limits)}
    gap = totals["advocate"] - totals["challenger"]
    if abs(gap) <= limits.tie_margin:
        return Outcome(
            limits.cautious_side,
            totals,
            tie=True,
            reason=f"a tie ({totals['advocate']:.1f} to {totals['challenger']:.1f}) goes to the "
            f"cautious side, the {limits.cautious_side}",
        )
    preferred: Side = "advocate" if gap > 0 else "challenger"
    return Outcome(
        preferred,
        totals,
        tie=False,
        reason=f"the {preferred}'s case is better supported ({totals['advocate']:.1f} to "
        f"{totals['challenger']:.1f})",
    )
