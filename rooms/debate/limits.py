"""The debate's limits and the referee's rubric, defined once: `bot` exposes every field as a
setting of the group (`[groups.<name>.debate]`), with these defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

Side = Literal["advocate", "challenger"]
SIDES: tuple[Side, Side] = ("advocate", "challenger")
# The rubric's criteria, in the order the referee is shown them.
CRITERIA = ("evidence", "logic", "counter_evidence", "quantification", "reversibility")
CRITERION_LABELS = {
    "evidence": "Evidence quality (data and analogous precedent)",
    "logic": "Logical coherence",
    "counter_evidence": "Engagement with counter-evidence",
    "quantification": "Quantification",
    "reversibility": "Honesty about the cost of reversing",
}
DEFAULT_WEIGHTS = {
    "evidence": 30,
    "logic": 20,
    "counter_evidence": 20,
    "quantification": 20,
    "reversibility": 10,
}
SCORE_MAX = 10  # the referee scores each criterion 0–10


# The name debate registers under (rooms/__init__.py): its tasks record it, and a group's
# policy keeps these limits under it (rooms.base.model.GroupPolicy.protocol_limits).
NAME: Final = "debate"


class LimitsError(ValueError):
    """Limits that cannot be used; the message names the fields."""


@dataclass(frozen=True)
class DebateLimits:
    weights: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    questions_per_side: int = 5  # cross-examination: questions each side may ask, one answer each
    cautious_side: Side = "challenger"  # a tie goes to discipline (reversibility)
    tie_margin: float = 0.0  # weighted totals this close (out of 100) are a tie

    def __post_init__(self) -> None:
        problems = []
        if set(self.weights) != set(CRITERIA):
            problems.append("weights must name exactly: " + ", ".join(CRITERIA))
        elif any(w < 0 for w in self.weights.values()):
            problems.append("weights cannot be negative")
        elif sum(self.weights.values()) != 100:
            problems.append(f"weights must sum to 100, not {sum(self.weights.values())}")
        if self.questions_per_side < 1:
            problems.append("questions_per_side must be at least 1")
        if self.cautious_side not in SIDES:
            problems.append("cautious_side must be advocate or challenger")
        if not 0 <= self.tie_margin < 100:
            problems.append("tie_margin must be between 0 and 100")
        if problems:
            raise LimitsError("; ".join(problems))
