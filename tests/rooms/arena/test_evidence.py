"""Evidence scores, weakest-link trust and assurance levels (DESIGN §9)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooms.arena.evidence import (
    CONGRUENCE,
    RELIABILITY,
    Evidence,
    Rating,
    RatingError,
    level,
    score,
    settle,
    trust,
)


@pytest.mark.parametrize(
    ("source", "context", "expected"),
    [
        ("official", "exact", 0.9),  # official benchmark, same context: no penalty
        ("blog", "similar", 0.4),  # a blog post, similar context: CL ≥ 0.5, no penalty
        ("case_study", "loose", 0.64),  # 0.8 × (1 − 0.2)
        ("inferred", "tangential", 0.18),  # 0.3 × (1 − 0.4)
        ("forum", "related", 0.5),  # CL exactly 0.5: still no penalty
        ("community_benchmark", "loose", 0.56),
        ("peer_reviewed", "tangential", 0.48),
    ],
)
def test_the_seed_examples(source: str, context: str, expected: float) -> None:
    assert score(RELIABILITY[source], CONGRUENCE[context]) == expected


def test_the_tables_are_the_seeds() -> None:
    assert RELIABILITY == {
        "official": 0.9,
        "peer_reviewed": 0.8,
        "case_study": 0.8,
        "community_benchmark": 0.7,
        "forum": 0.5,
        "blog": 0.4,
        "inferred": 0.3,
    }
    assert CONGRUENCE == {
        "exact": 1.0,
        "similar": 0.7,
        "related": 0.5,
        "loose": 0.3,
        "tangential": 0.1,
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.9, "L2"),
        (0.7, "L2"),  # boundary: 0.7 is L2
        (0.6999, "L1"),
        (0.64, "L1"),
        (0.4, "L1"),  # boundary: 0.4 is L1
        (0.3999, "L0"),
        (0.18, "L0"),
        (0.0, "L0"),
    ],
)
def test_levels_and_their_boundaries(value: float, expected: str) -> None:
    assert level(value) == expected


def test_boundaries_reached_by_computed_scores_are_not_lost_to_float_noise() -> None:
    # 0.5 × (1 − (0.5 − 0.3)) computes to 0.39999999999999997 without rounding.
    assert level(score(0.5, 0.3)) == "L1"
    assert level(score(0.7, 0.5)) == "L2"
    assert level(score(0.875, 0.3)) == "L2"


@pytest.mark.parametrize(("r", "cl"), [(1.1, 0.5), (-0.1, 0.5), (0.5, 1.5), (math.nan, 0.5)])
def test_ratings_outside_zero_to_one_are_refused(r: float, cl: float) -> None:
    with pytest.raises(RatingError):
        score(r, cl)


def ev(r: float, cl: float, *, load_bearing: bool = True, title: str = "x") -> Evidence:
    return Evidence(title, "", r, cl, load_bearing)


def test_trust_is_the_weakest_load_bearing_link() -> None:
    assert trust([ev(0.9, 1.0), ev(0.8, 0.3), ev(0.3, 0.1, load_bearing=False)]) == 0.64
    assert trust([ev(0.3, 0.1, load_bearing=False)]) == 0.0  # nothing load-bearing: an opinion
    assert trust([]) == 0.0


ratings = st.tuples(st.floats(0, 1), st.floats(0, 1))


@given(st.lists(ratings, min_size=1), ratings)
def test_a_supporting_citation_never_lowers_trust(
    bearing: list[tuple[float, float]], extra: tuple[float, float]
) -> None:
    base = [ev(r, cl) for r, cl in bearing]
    assert trust([*base, ev(*extra, load_bearing=False)]) == trust(base)


@given(st.lists(ratings, min_size=1), ratings)
def test_a_load_bearing_citation_can_only_lower_trust(
    bearing: list[tuple[float, float]], extra: tuple[float, float]
) -> None:
    base = [ev(r, cl) for r, cl in bearing]
    assert trust([*base, ev(*extra)]) <= trust(base)


@given(ratings)
def test_scores_stay_between_half_r_and_r(rating: tuple[float, float]) -> None:
    r, cl = rating
    half_place = 0.00005  # scores are rounded to 4 places
    assert r * 0.5 - half_place <= score(r, cl) <= r + half_place


def test_a_contested_rating_counts_as_chosen_else_the_lowest() -> None:
    high, low = Rating("ada", 0.9, 1.0), Rating("bo", 0.8, 0.3)
    assert settle([high, low], chosen="ada") == high
    assert settle([high, low]) == low  # nobody said which is better justified: the doubt counts
    assert settle([high, low], chosen="nobody") == low
    with pytest.raises(ValueError):
        settle([])
