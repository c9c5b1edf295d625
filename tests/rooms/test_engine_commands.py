"""Reading a command from a message that mentions the bot: a table, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooms.commands import COMMANDS, arbitrate_args, parse

CASES = [
    ("<@U0BOT> stop", ("stop", "", "stop")),
    ("@tribunal status", ("status", "", "status")),
    ("@tribunal Status?", ("status", "", "Status?")),
    ("/approve", ("approve", "", "/approve")),
    (
        "@tribunal approve, go with option 2",
        ("approve", "go with option 2", "approve, go with option 2"),
    ),
    ("<@U0BOT> <@U0BOT>: reject", ("reject", "", "reject")),
    ("@tribunal write a parser", (None, "", "write a parser")),
    (
        "@tribunal stop the server crashing",
        ("stop", "the server crashing", "stop the server crashing"),
    ),
    ("please stop", (None, "", "please stop")),
    ("@tribunal arbitrate", ("arbitrate", "", "arbitrate")),
    ("/arbitrate now", ("arbitrate", "now", "/arbitrate now")),
    (
        "<@U0BOT> Arbitrate: look at the retry loop",
        ("arbitrate", "look at the retry loop", "Arbitrate: look at the retry loop"),
    ),
    ("@tribunal please arbitrate", (None, "", "please arbitrate")),
    ("@tribunal arbitration is slow", (None, "", "arbitration is slow")),
    ("", (None, "", "")),
    ("@tribunal", (None, "", "")),
    ("   <@U1>   \t", (None, "", "")),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_parse_table(text: str, expected: tuple[str | None, str, str]) -> None:
    assert parse(text) == expected


ARBITRATE_ARGS = [
    ("", (False, "")),
    ("now", (True, "")),
    ("NOW!", (True, "")),
    ("now: look at the migration", (True, "look at the migration")),
    ("now — the tests", (True, "the tests")),
    ("look at the migration now", (False, "look at the migration now")),
    ("nowhere near done", (False, "nowhere near done")),
    ("knows now", (False, "knows now")),
    ("  the retry loop  ", (False, "the retry loop")),
]


@pytest.mark.parametrize(("after", "expected"), ARBITRATE_ARGS)
def test_arbitrate_args_table(after: str, expected: tuple[bool, str]) -> None:
    assert arbitrate_args(after) == expected


@given(st.text())
def test_arbitrate_args_keep_the_note(after: str) -> None:
    now, note = arbitrate_args(after)
    assert note == note.strip()
    assert note in after
    if not now:
        assert note == after.strip()


mentions = st.lists(st.sampled_from(["<@U0BOT>", "@tribunal", "<@W123|bot>", "@x"]), max_size=3)


@given(st.text())
def test_parse_never_raises_and_keeps_the_words(text: str) -> None:
    command, after, whole = parse(text)
    assert command is None or command in COMMANDS
    assert whole == whole.strip()
    assert after in whole
    if command is None:
        assert after == ""


@given(
    mentions,
    st.sampled_from(COMMANDS),
    st.sampled_from(["", ".", "!", "?", ":"]),
    st.text(alphabet=st.characters(blacklist_categories=["Cc", "Cs", "Zs"]), max_size=20),
)
def test_a_command_after_any_mentions_is_read(
    prefix: list[str], command: str, punct: str, tail: str
) -> None:
    text = " ".join([*prefix, command.upper() + punct, tail])
    parsed, after, _ = parse(text)
    assert parsed == command
    assert after == tail.strip()


@given(mentions, st.text(min_size=1).filter(lambda t: t.strip() != ""))
def test_text_that_starts_with_no_command_word_is_not_a_command(
    prefix: list[str], text: str
) -> None:
    first = text.split()[0].lstrip("/").rstrip(".,:;!?").lower() if text.split() else ""
    parsed, _, _ = parse(" ".join([*prefix, "x" + text]))
    if ("x" + first) not in COMMANDS:
        assert parsed is None
