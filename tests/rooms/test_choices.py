"""rooms/core/choices.py as a rule table: a choice's value binds an option number to an
escalation id, and nothing else parses as one; the engine takes the option's text by number."""

from __future__ import annotations

import pytest

from rooms.core.choices import (
    choice_actions,
    choice_value,
    chosen,
    parse_choice,
    parse_number,
)


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("42.2", (42, 2)),
        ("1.1", (1, 1)),
        ("1.0", (1, 0)),  # parsed; refused as out of range by `chosen`
        ("42", None),
        ("42.", None),
        (".2", None),
        ("42.2.1", None),
        ("42.1000", None),
        ("-1.1", None),
        ("42.2 ", None),
        ("４２.２", None),  # full-width digits are not ours
        ("1" * 19 + ".1", None),
        ("", None),
    ],
)
def test_only_our_values_parse(value: str, parsed: tuple[int, int] | None) -> None:
    assert parse_choice(value) == parsed


def test_a_value_round_trips() -> None:
    assert parse_choice(choice_value(7, 3)) == (7, 3)


@pytest.mark.parametrize(("option", "text"), [(0, None), (1, "a"), (2, "b"), (3, None)])
def test_the_text_is_taken_by_number(option: int, text: str | None) -> None:
    assert chosen(("a", "b"), option) == text


@pytest.mark.parametrize(
    ("typed", "number"),
    [
        ("2", 2),
        (" 2 ", 2),
        ("2.", 2),
        ("two", None),
        ("", None),
        ("1 2", None),
        ("1000", None),
        ("²", None),
        ("２", 2),
    ],
)
def test_choose_reads_one_number(typed: str, number: int | None) -> None:
    assert parse_number(typed) == number


def test_one_button_per_option_labelled_with_its_number() -> None:
    long = "x" * 200
    actions = choice_actions(9, ("yes", long))
    assert [(a.action, a.value) for a in actions] == [("choose", "9.1"), ("choose", "9.2")]
    assert actions[0].label == "1. yes"
    assert actions[1].label.startswith("2. x") and len(actions[1].label) <= 75
