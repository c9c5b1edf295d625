"""A person's choice among an escalation's options, as data (DESIGN §3 "Humans").

When a ruling or a question offers options, its card carries one button per option, plus
Reject; Approve is offered only for a yes/no question (one without options). A choice button's
value binds the option's number to the escalation it answers (`42.2`: option 2 of escalation
#42). Escalation ids are never reused and an escalation is asked once, so the id is also the
version of the question: a click on an escalation that was answered, closed or moved on is stale,
and a number outside the question's options is refused. The engine never reads a button's label:
what the owner is told is the option's stored text, looked up by its number.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rooms.base.model import Action
from rooms.base.words import CHOOSE

_VALUE = re.compile(r"(?P<escalation>[0-9]{1,18})\.(?P<option>[0-9]{1,3})")
LABEL_LIMIT = 70  # fits Slack's 75 and Discord's 80 characters with the number in front


def choice_value(escalation_id: int, option: int) -> str:
    """The button value of option `option` (1-based, as the card numbers it)."""
    return f"{escalation_id}.{option}"


def parse_choice(value: str) -> tuple[int, int] | None:
    """(escalation id, option number) of a choice button's value; None when it is not one."""
    found = _VALUE.fullmatch(value)
    if found is None:
        return None
    return int(found["escalation"]), int(found["option"])


def choice_actions(escalation_id: int, options: Sequence[str]) -> tuple[Action, ...]:
    """One button per option, labelled with its number and (the start of) its text."""
    return tuple(
        Action(
            CHOOSE,
            _label(n, option),
            choice_value(escalation_id, n),
            "primary" if n == 1 else "default",
        )
        for n, option in enumerate(options, 1)
    )


def _label(n: int, option: str) -> str:
    text = " ".join(option.split())
    if len(text) > LABEL_LIMIT:
        text = text[: LABEL_LIMIT - 1] + "…"
    return f"{n}. {text}"


def chosen(options: Sequence[str], option: int) -> str | None:
    """The text of option `option` (1-based), or None when the question has no such option."""
    if 1 <= option <= len(options):
        return options[option - 1]
    return None


def recorded(option: int, text: str) -> str:
    """What the escalation's answer and the decision record keep: which option, its words."""
    return f"option {option}: {text}"


def out_of_range(user: str, escalation_id: int, option: int, count: int) -> str:
    offers = f"it offers 1 to {count}" if count else "it is a yes/no question: approve or reject"
    return (
        f"{user}: escalation #{escalation_id} has no option {option} ({offers}). Nothing changed."
    )


def parse_number(text: str) -> int | None:
    """The option number of `choose 2` / a bare `2`; None for anything else."""
    word = text.strip().rstrip(".")
    return int(word) if word.isdecimal() and len(word) <= 3 else None  # not "²": int() fails
