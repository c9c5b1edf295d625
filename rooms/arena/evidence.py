"""Evidence ratings and trust (DESIGN §9).

Every piece of evidence carries R, how reliable its source is, and CL, how closely its context
matches ours. Its score is `R × (1 − max(0, 0.5 − CL))`: evidence from a context at least
"related" keeps its reliability, evidence from further away loses up to half of it. A position's
trust is its weakest link: the lowest score among the evidence it marks load-bearing. Supporting
citations are shown but never counted, so adding one can never lower a position's trust, and
piling up weak sources can never raise it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Level = Literal["L0", "L1", "L2"]

# R by kind of source: the scale every expert is told to use.
RELIABILITY: dict[str, float] = {
    "official": 0.9,  # official documentation or benchmarks
    "peer_reviewed": 0.8,  # a peer-reviewed paper or a reputable technical blog
    "case_study": 0.8,  # a production case study from a named organisation
    "community_benchmark": 0.7,  # a reproducible community benchmark
    "forum": 0.5,  # forum or Q&A consensus
    "blog": 0.4,  # a single blog post, a personal opinion
    "inferred": 0.3,  # the expert's own experience or inference
}
# CL by how closely the evidence's context matches the question's.
CONGRUENCE: dict[str, float] = {
    "exact": 1.0,  # same stack, scale and constraints
    "similar": 0.7,  # same domain, comparable scale
    "related": 0.5,  # same technology, another domain
    "loose": 0.3,  # a general principle from another stack
    "tangential": 0.1,  # another domain and another stack
}
L2_TRUST = 0.7
L1_TRUST = 0.4
_PLACES = 4  # scores are shown and compared to 4 places: 0.8 × 0.8 is 0.64, not 0.6400000000000001


class RatingError(ValueError):
    """An R or CL outside [0, 1]."""


def score(r: float, cl: float) -> float:
    """The score of evidence with reliability `r` and congruence `cl`."""
    for name, value in (("R", r), ("CL", cl)):
        if not 0.0 <= value <= 1.0:  # also rejects NaN
            raise RatingError(f"{name} must be between 0 and 1, not {value}")
    return round(r * (1.0 - max(0.0, 0.5 - cl)), _PLACES)


def level(trust: float) -> Level:
    """The assurance level of a trust: L2 from 0.7, L1 from 0.4, else L0."""
    if trust >= L2_TRUST:
        return "L2"
    if trust >= L1_TRUST:
        return "L1"
    return "L0"


@dataclass(frozen=True)
class Evidence:
    """One citation in a position: what it is, where from, its rating, and whether the position
    stands or falls with it."""

    title: str
    source: str
    r: float
    cl: float
    load_bearing: bool = True
    cited_by: str = ""  # the expert's slug

    @property
    def score(self) -> float:
        return score(self.r, self.cl)

    @property
    def key(self) -> str:
        """What makes two citations the same evidence: the source, else the title."""
        return " ".join((self.source or self.title).lower().split()).rstrip("/.")


def trust(evidence: Iterable[Evidence]) -> float:
    """The weakest load-bearing score; 0 when nothing is load-bearing (an opinion is L0)."""
    scores = [e.score for e in evidence if e.load_bearing]
    return min(scores) if scores else 0.0


@dataclass(frozen=True)
class Rating:
    """One expert's rating of a piece of evidence, with why."""

    by: str
    r: float
    cl: float
    justification: str = ""

    @property
    def score(self) -> float:
        return score(self.r, self.cl)


def settle(ratings: list[Rating], chosen: str | None = None) -> Rating:
    """The rating that counts when experts rated the same evidence differently: the one the
    synthesis judged better justified (`chosen`: the rater's slug), else — when in doubt —
    the lowest score."""
    if not ratings:
        raise ValueError("no rating to settle")
    for rating in ratings:
        if chosen is not None and rating.by == chosen:
            return rating
    return min(ratings, key=lambda rating: (rating.score, rating.by))
