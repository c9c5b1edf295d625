"""Rendering: console view of messages, escalation hints, and splitting at a platform limit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.render import (
    answer_hint,
    escalation_id,
    file_note,
    open_fence,
    plain,
    split_text,
    too_long_for_messages,
)
from rooms.model import Action, Outbound, RoomRef

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
