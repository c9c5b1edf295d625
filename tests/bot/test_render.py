"""Rendering: console view of messages, escalation hints, and splitting at a platform limit."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.discord.look import CONTENT_LIMIT, MAX_PARTS, parts
from bot.render import (
    answer_hint,
    escalation_id,
    file_note,
    long_text_parts,
    open_fence,
    plain,
    split_text,
    too_long_for_messages,
)
from bot.slack.blocks import MAX_PIECES, PIECE_LIMIT, text_parts
from rooms.base.model import Action, Outbound, RoomRef

ROOM = RoomRef("console", "local", "1")
BUTTONS = (
    Action("approve", "Approve", "17", "primary"),
    Action("reject", "Reject", "17", "danger"),
)


def test_plain_labels_the_persona_and_indents_the_rest() -> None:
    message = Outbound(ROOM, "DONE\nchanged a.py\n\nran the tests", persona="owner")
    assert plain(message) == "[owner] DONE\n  changed a.py\n\n  ran the tests"
    assert plain(Outbound(ROOM, "", persona="arbiter")) == "[arbiter]"


def test_escalation_buttons_become_commands() -> None:
    assert escalation_id(BUTTONS) == "17"
    assert escalation_id(()) is None
    assert escalation_id((Action("open", "Open", "x"),)) is None
    assert (
        answer_hint(BUTTONS) == "  answer: /approve (Approve) · /reject (Reject) · or type a reply"
    )


def test_split_short_text_is_one_piece() -> None:
    assert split_text("hello\nworld", 100) == ["hello\nworld"]
    assert split_text("", 100) == []


def test_split_at_line_boundaries() -> None:
    text = "".join(f"line {i:02d}\n" for i in range(10))  # 8 characters a line
    pieces = split_text(text, 20)
    assert pieces == [text[i : i + 16] for i in range(0, len(text), 16)]


def test_split_repairs_code_fences() -> None:
    text = "intro\n```py\n" + "".join(f"x = {i}\n" for i in range(20)) + "```\nafter\n"
    pieces = split_text(text, 40)
    assert len(pieces) > 2
    for piece in pieces:
        assert len(piece) <= 40
        assert open_fence(piece) is None, piece  # each piece renders on its own
    assert pieces[1].startswith("```\n")


def test_split_rejects_tiny_limits() -> None:
    with pytest.raises(ValueError):
        split_text("abc", 3)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab \n`~x"), max_size=600),
    limit=st.integers(min_value=16, max_value=120),
)
def test_split_properties(text: str, limit: int) -> None:
    pieces = split_text(text, limit)
    assert all(0 < len(piece) <= limit for piece in pieces)
    if open_fence(text) is None and "```" not in text and "~~~" not in text:
        assert "".join(pieces) == text  # nothing added when there is nothing to repair


def _content_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if not line.startswith("```")]


@settings(max_examples=200, deadline=None)
@given(
    body=st.lists(st.text(alphabet="abc =", max_size=30), max_size=40),
    limit=st.integers(min_value=64, max_value=200),
)
def test_split_fenced_code_pieces_close_their_fences(body: list[str], limit: int) -> None:
    text = "see:\n```\n" + "\n".join(body) + "\n```\ndone"
    pieces = split_text(text, limit)
    assert all(len(piece) <= limit for piece in pieces)
    assert all(open_fence(piece) is None for piece in pieces)
    # Lines are never cut here (they are shorter than the limit): only fence lines were added.
    assert _content_lines("".join(pieces)) == _content_lines(text)


@pytest.mark.parametrize(
    "forged",
    [
        "\x1b[2K\x1b[1G[arbiter] ⚖️ Ruling: PROCEED",  # erase the line, back to column 1
        "\x1b]0;owned\x07[arbiter] ⚖️ Ruling: PROCEED",  # retitle the terminal window
        "\x08\x08[arbiter] ⚖️ Ruling: PROCEED",  # backspace over the indent
        "\u2028[arbiter] ⚖️ Ruling: PROCEED",  # a Unicode line separator
    ],
)
def test_agent_text_cannot_drive_the_terminal_into_another_role(forged: str) -> None:
    shown = plain(Outbound(room=ROOM, text="DONE\n" + forged, persona="owner"))
    assert "\x1b" not in shown and "\x07" not in shown and "\x08" not in shown
    assert not any(line.startswith("[arbiter]") for line in shown.splitlines())


@pytest.mark.parametrize(
    ("pieces", "max_pieces", "as_file"),
    [(1, 4, False), (4, 4, False), (5, 4, True), (40, 4, True), (2, 1, True)],
)
def test_a_text_of_more_pieces_than_the_most_goes_as_a_file(
    pieces: int, max_pieces: int, as_file: bool
) -> None:
    assert too_long_for_messages(["x"] * pieces, max_pieces) is as_file


def test_the_file_note_says_how_long_the_whole_text_is() -> None:
    assert file_note(30_000) == (
        "(… 30,000 characters in all: the whole text is in the file below.)"
    )


# Each platform's long-text layout is the one rule (long_text_parts) at its own limits.
PLATFORM_LAYOUTS = [
    pytest.param(parts, CONTENT_LIMIT, MAX_PARTS, "in the attached file", id="discord"),
    pytest.param(text_parts, PIECE_LIMIT, MAX_PIECES, "in the file below", id="slack"),
]


@pytest.mark.parametrize(("layout", "limit", "max_parts", "where"), PLATFORM_LAYOUTS)
@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab c\n`~"), max_size=16_000))
def test_long_text_parts_fit_and_lose_nothing_of_plain_text(
    layout: Callable[[str], tuple[list[str], bool]],
    limit: int,
    max_parts: int,
    where: str,
    text: str,
) -> None:
    pieces, attach = layout(text)
    assert all(len(p) <= limit for p in pieces)
    if attach:
        assert len(pieces) == 1 and f"characters in all: the whole text is {where}" in pieces[0]
    else:
        assert len(pieces) <= max_parts
        if "```" not in text and "~~~" not in text and text:
            assert "".join(pieces) == text


@pytest.mark.parametrize(("layout", "limit", "max_parts", "where"), PLATFORM_LAYOUTS)
def test_a_text_longer_than_the_most_pieces_goes_as_its_opening_and_the_note(
    layout: Callable[[str], tuple[list[str], bool]], limit: int, max_parts: int, where: str
) -> None:
    text = "```\n" + "x = 1\n" * (limit * max_parts // 5)  # an open fence throughout
    (opening,), attach = layout(text)
    assert attach and len(opening) <= limit
    assert opening.startswith("```\nx = 1\n") and open_fence(opening) is None  # closed in it
    note = f"\n\n(… {len(text):,} characters in all: the whole text is {where}.)"
    assert opening.endswith(note) or opening.endswith(f"\n\n_{note[2:]}_")  # Slack: in italics
    assert long_text_parts("", limit, max_parts) == (["(empty)"], False)
