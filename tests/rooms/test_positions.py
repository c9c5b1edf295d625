"""Fair input (rooms/judge/positions.py): seeded seating, masked roles, one budget per side, the
swap check's tie rule."""

from __future__ import annotations

from collections import Counter

import pytest

from rooms.base.model import Ruling
from rooms.judge.positions import (
    CAUTIOUS_CONDITION,
    irreversible,
    mask_roles,
    positions_section,
    seat,
    swap_rule,
)


def test_the_seating_is_seeded_and_fair() -> None:
    assert seat(11) == seat(11)
    firsts = Counter(seat(s).first for s in range(4000))
    assert abs(firsts["owner"] / 4000 - 0.5) < 0.03
    s = seat(5)
    assert s.swapped().first != s.first and s.swapped().swapped() == s


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("the reviewer is wrong", "Position B is wrong"),
        ("The Owner's change", "Position A's change"),
        (
            "as the implementer said, the verifier missed it",
            "as Position A said, Position B missed it",
        ),
        ("ownership and reviewers", "ownership and Position B"),
    ],
)
def test_role_names_are_masked(text: str, masked: str) -> None:
    assert mask_roles(text, {"owner": "A", "reviewer": "B"}) == masked


def test_the_section_shows_letters_not_roles_with_one_budget() -> None:
    seating = seat(1)
    owner = "DONE\nThe reviewer keeps asking for a mock; the owner's code is right. " + "o" * 9000
    reviewer = "CHANGES_REQUESTED\nThe owner skipped the test for empty input."
    section = positions_section(owner, reviewer, seating, budget=500)
    letter = seating.letter
    assert "owner" not in section.lower().replace("PROCEED sides", "")
    assert "reviewer" not in section.lower()
    assert "CHANGES_REQUESTED" not in section and "\n> DONE" not in section
    assert f"PROCEED sides with Position {letter['owner']}" in section
    assert f"REVISE sides with Position {letter['reviewer']}" in section
    first = section.index("### Position A")
    assert section.index("### Position B") > first
    assert "o" * 400 in section and "o" * 501 not in section  # cut to the budget
    assert "more characters cut; same budget per side" in section
    # In the swapped seating the texts change places.
    swapped = positions_section(owner, reviewer, seating.swapped(), budget=500)
    a_part = swapped.split("### Position A")[1].split("### Position B")[0]
    own_a = section.split("### Position A")[1].split("### Position B")[0]
    assert ("empty input" in a_part) != ("empty input" in own_a)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("add a parser for the config file", False),
        ("refactor the tests", False),
        ("deploy the service to production", True),
        ("publish version 2 to the registry", True),
        ("git push --force to main", True),
        ("drop table users in the migration", True),
        ("send the newsletter emails", True),
        ("delete the backups older than a week", True),
        ("describe the release notes? no: fix a typo", True),  # 'release' is enough: cautious
    ],
)
def test_irreversible_changes_are_recognised(text: str, expected: bool) -> None:
    assert irreversible(text) is expected


def _judge_prefers_first(first_verdict: str, second_verdict: str) -> tuple[Ruling, Ruling]:
    return (
        Ruling(
            verdict=first_verdict,
            reasons="A is right",
            conditions=["x"] if first_verdict == "REVISE" else [],
        ),
        Ruling(
            verdict=second_verdict,
            reasons="A is right",
            conditions=["fix y"] if second_verdict == "REVISE" else [],
        ),
    )


def test_agreeing_orders_keep_the_ruling() -> None:
    a = Ruling(verdict="PROCEED", reasons="fine")
    ruling, note = swap_rule(a, a, irreversible_change=True)
    assert ruling is a and "both orders ruled PROCEED" in note


def test_disagreeing_orders_on_a_reversible_change_revise_toward_caution() -> None:
    first, second = _judge_prefers_first("PROCEED", "REVISE")
    ruling, note = swap_rule(first, second, irreversible_change=False)
    assert ruling.verdict == "REVISE" and ruling.conditions == ["fix y"]
    assert "tie rule" in note and "reversible" in ruling.reasons
    ruling, _ = swap_rule(
        Ruling(verdict="PROCEED"),
        Ruling(verdict="RESET", new_direction="z"),
        irreversible_change=False,
    )
    assert ruling.conditions == [CAUTIOUS_CONDITION]


def test_disagreeing_orders_on_an_irreversible_change_escalate() -> None:
    first, second = _judge_prefers_first("REVISE", "PROCEED")
    ruling, note = swap_rule(first, second, irreversible_change=True)
    assert ruling.verdict == "ESCALATE" and ruling.question.endswith("?")
    assert 2 <= len(ruling.options) <= 4 and "ESCALATE" in note


def test_an_unreadable_reading_is_no_agreement() -> None:
    bad = Ruling(verdict="ESCALATE", readable=False)
    ruling, _ = swap_rule(bad, bad, irreversible_change=False)
    assert ruling.verdict == "REVISE"
