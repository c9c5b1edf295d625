"""The marker rules of DESIGN §3: a table of cases, then properties over generated text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooms.judge.markers import Role, find_marker, find_verdict, locate_marker

# DESIGN §3: the first 12 visible lines. Written out, not imported, so that these tests fail
# if the parser's own constant drifts.
WINDOW = 12

# (role, text, expected canonical marker or None)
ALIASES: list[tuple[Role, str, str | None]] = [
    # owner
    ("owner", "DONE", "DONE"),
    ("owner", "DONE_WITH_CONCERNS", "DONE"),
    ("owner", "NEEDS_CONTEXT", "NEEDS_CONTEXT"),
    ("owner", "BLOCKED", "BLOCKED"),
    ("owner", "APPROVED", None),
    ("owner", "LGTM", None),
    ("owner", "CHANGES_REQUESTED", None),
    ("owner", "PROCEED", None),
    ("owner", "Done", None),  # upper case as written
    ("owner", "done", None),
    # reviewer
    ("reviewer", "APPROVED", "APPROVED"),
    ("reviewer", "Approved", "APPROVED"),
    ("reviewer", "approved", "APPROVED"),
    ("reviewer", "LGTM", "APPROVED"),
    ("reviewer", "lgtm", "APPROVED"),
    ("reviewer", "Lgtm", "APPROVED"),
    ("reviewer", "DONE", "APPROVED"),
    ("reviewer", "DONE_WITH_CONCERNS", "CHANGES_REQUESTED"),
    ("reviewer", "CHANGES_REQUESTED", "CHANGES_REQUESTED"),
    ("reviewer", "NEEDS_CONTEXT", "NEEDS_CONTEXT"),
    ("reviewer", "BLOCKED", "BLOCKED"),
    ("reviewer", "Done", None),
    ("reviewer", "Changes_Requested", None),
    ("reviewer", "REVISE", None),
    # arbiter
    ("arbiter", "PROCEED", "PROCEED"),
    ("arbiter", "REVISE", "REVISE"),
    ("arbiter", "RESET", "RESET"),
    ("arbiter", "ESCALATE", "ESCALATE"),
    ("arbiter", "Proceed", None),
    ("arbiter", "CONTINUE", None),
    ("arbiter", "APPROVED", None),
    ("arbiter", "DONE", None),
]

FORMS: list[tuple[Role, str, str | None]] = [
    # bold, headings, quotes, indentation, line endings
    ("owner", "**DONE**", "DONE"),
    ("owner", "__DONE__", "DONE"),
    ("reviewer", "**DONE_WITH_CONCERNS**\nneed follow-up", "CHANGES_REQUESTED"),
    ("owner", "## DONE", "DONE"),
    ("reviewer", "> APPROVED", "APPROVED"),
    ("owner", "   DONE", "DONE"),
    ("owner", "DONE\r\nwith windows line ends", "DONE"),
    # VERDICT prefix
    ("arbiter", "VERDICT: RESET", "RESET"),
    ("arbiter", "VERDICT — RESET", "RESET"),
    ("arbiter", "VERDICT - RESET", "RESET"),
    ("arbiter", "VERDICT – RESET", "RESET"),
    ("arbiter", "VERDICT RESET", "RESET"),
    ("arbiter", "VERDICT:RESET", "RESET"),
    ("arbiter", "**VERDICT: REVISE**\nfix it", "REVISE"),
    ("arbiter", "**VERDICT:** REVISE", "REVISE"),
    ("arbiter", "VERDICT: **ESCALATE**", "ESCALATE"),
    ("arbiter", "Verdict: PROCEED", "PROCEED"),
    ("arbiter", "VERDICT: proceed", None),
    ("arbiter", "VERDICT", None),
    # trailing punctuation and text
    ("reviewer", "APPROVED.", "APPROVED"),
    ("reviewer", "Approved.\nlooks good", "APPROVED"),
    ("arbiter", "REVISE — fix the test", "REVISE"),
    ("owner", "DONE: all tests pass", "DONE"),
    ("owner", "BLOCKED (no network)", "BLOCKED"),
    ("owner", "DONE!", "DONE"),
    ("reviewer", "LGTM, ship it", "APPROVED"),
    ("arbiter", "ESCALATE; the user must choose", "ESCALATE"),
    # a word in prose, or a longer word, is not a marker
    ("arbiter", "we should proceed", None),
    ("arbiter", "I think we should PROCEED", None),
    ("owner", "The work is DONE", None),
    ("arbiter", "PROCEEDING with care", None),
    ("owner", "DONEX", None),
    ("owner", "STEP_DONE\nmore to do", None),
    ("reviewer", "TASK_DONE", None),
    ("owner", "`DONE`", None),
    ("owner", "```DONE```\nnothing", None),  # inline code on one line, not a fence
    ("owner", "- DONE", None),  # a list item is a finding, not a marker line
    # fenced code is skipped
    ("owner", "```\nDONE\n```\nBLOCKED", "BLOCKED"),
    ("owner", "~~~\nDONE\n~~~", None),
    ("owner", "```python\nDONE\n```", None),
    ("owner", "```\nDONE", None),  # unterminated: runs to the end
    ("owner", "````\n```\nDONE\n````\nBLOCKED", "BLOCKED"),  # a shorter fence does not close
    ("owner", "```\n```python\nDONE\n```\nBLOCKED", "BLOCKED"),  # an info string does not close
    ("owner", "```\ncode\n   ```   \nDONE", "DONE"),
    # <internal> blocks are skipped
    ("owner", "<internal>DONE</internal>\nBLOCKED", "BLOCKED"),
    ("owner", "<internal>\nDONE\n</internal>\nBLOCKED", "BLOCKED"),
    ("owner", "<internal>\nDONE", None),  # unterminated: runs to the end
    ("owner", "<internal>notes\nDONE\nBLOCKED", None),
    ("owner", "<internal>x</internal>DONE", "DONE"),  # visible text after the block
    ("owner", "<internal>a</internal> <internal>b</internal> DONE", "DONE"),
    ("arbiter", "<internal>private notes</internal>\nVERDICT — RESET\nrestart", "RESET"),
    ("owner", "DONE <internal>", "DONE"),
    # the first marker of the role wins; others' words are skipped
    ("owner", "BLOCKED\nDONE", "BLOCKED"),
    ("owner", "APPROVED\nDONE", "DONE"),
    ("arbiter", "중재 판단을 정리합니다.\nVERDICT: REVISE\nfix it", "REVISE"),
    # unmarked
    ("owner", "random prose", None),
    ("reviewer", "", None),
    ("arbiter", "\n\n   \n", None),
]


@pytest.mark.parametrize(("role", "text", "expected"), ALIASES + FORMS)
def test_marker_rules(role: Role, text: str, expected: str | None) -> None:
    assert find_marker(text, role) == expected


def test_find_verdict_reads_the_arbiter_markers() -> None:
    assert find_verdict("PROCEED\nok") == "PROCEED"
    assert find_verdict("DONE\nok") is None


@pytest.mark.parametrize(
    ("before", "expected"),
    [(WINDOW - 1, "DONE"), (WINDOW, None)],
    ids=["line 12 is read", "line 13 is not"],
)
def test_the_window_is_twelve_visible_lines(before: int, expected: str | None) -> None:
    filler = [f"line {i}" for i in range(before)]
    text = "\n\n".join(filler) + "\n```\nhidden\nhidden\n```\n<internal>x\ny</internal>\nDONE"
    assert find_marker(text, "owner") == expected


def test_locate_marker_gives_the_line_and_its_rest() -> None:
    found = locate_marker("intro\n\n**REVISE** — fix the parser", "arbiter")
    assert found is not None
    assert (found.marker, found.index, found.rest) == ("REVISE", 1, "fix the parser")


def test_a_pathological_line_costs_linear_time() -> None:
    # Was quadratic backtracking: a 16k-space line took seconds. With possessive quantifiers
    # this runs in milliseconds; the timeout guards against a regression, not a speed claim.
    assert find_marker(" " * 200_000 + "!", "owner") is None
    assert find_marker("#" * 200_000 + " x", "owner") is None


# --- properties ------------------------------------------------------------------------------

ROLES: list[Role] = ["owner", "reviewer", "arbiter"]
WORDS = {
    "owner": ["DONE", "BLOCKED", "NEEDS_CONTEXT"],
    "reviewer": ["APPROVED", "LGTM", "CHANGES_REQUESTED"],
    "arbiter": ["PROCEED", "REVISE", "RESET", "ESCALATE"],
}
EXPECTED = {"LGTM": "APPROVED"}
DECORATIONS = ["{w}", "**{w}**", "VERDICT: {w}", "{w}.", "{w} — and more", "## {w}", "  {w}"]

# Prose lines that can never be read as a marker: lower-case words, none of them an alias that
# is accepted in any case.
prose_line = st.from_regex(r"[a-z]{1,8}( [a-z0-9,.]{1,8}){0,5}", fullmatch=True).filter(
    lambda s: re.match(r"[a-z]+", s).group() not in {"lgtm", "approved"}  # type: ignore[union-attr]
)
# Text for inside a hidden block: anything without line breaks that cannot end the block.
hidden_line = st.text(
    alphabet=st.characters(
        blacklist_characters="`~<>\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
        blacklist_categories=("Cs",),
    ),
    max_size=40,
)


@st.composite
def marker_line(draw: st.DrawFn) -> tuple[Role, str, str]:
    role = draw(st.sampled_from(ROLES))
    word = draw(st.sampled_from(WORDS[role]))
    line = draw(st.sampled_from(DECORATIONS)).format(w=word)
    return role, line, EXPECTED.get(word, word)


@given(st.text(), st.sampled_from(ROLES))
def test_never_raises_on_any_text(text: str, role: Role) -> None:
    result = find_marker(text, role)
    assert result is None or isinstance(result, str)


@given(
    st.text(alphabet=st.sampled_from(list("`~<>/internal DONE*_#:-\n\r\t")), max_size=200),
    st.sampled_from(ROLES),
)
def test_never_raises_on_markup_soup(text: str, role: Role) -> None:
    find_marker(text, role)


@given(
    marker_line(),
    st.lists(prose_line, max_size=5),
    st.lists(hidden_line, max_size=5),
    st.lists(hidden_line, max_size=5),
    st.sampled_from(["```", "~~~~", "```python", "<internal>"]),
    st.booleans(),
    st.lists(prose_line, max_size=5),
)
def test_a_marker_inside_a_fence_or_internal_block_is_never_read(
    marker: tuple[Role, str, str],
    before: list[str],
    hidden_before: list[str],
    hidden_after: list[str],
    opener: str,
    terminated: bool,
    after: list[str],
) -> None:
    role, line, _ = marker
    closer = {"```": "```", "~~~~": "~~~~", "```python": "```", "<internal>": "</internal>"}[opener]
    block = [opener, *hidden_before, line, *hidden_after]
    if terminated:
        block.append(closer)
    text = "\n".join([*before, *block, *(after if terminated else [])])
    assert find_marker(text, role) is None


@given(
    marker_line(),
    st.integers(min_value=0, max_value=WINDOW - 1),
    st.data(),
)
def test_a_marker_after_up_to_eleven_visible_lines_is_read(
    marker: tuple[Role, str, str], before: int, data: st.DataObject
) -> None:
    role, line, expected = marker
    lines = data.draw(st.lists(prose_line, min_size=before, max_size=before))
    blanks = data.draw(st.lists(st.sampled_from(["", "   ", "\t"]), max_size=5))
    text = "\n".join([*blanks, *lines, line, *data.draw(st.lists(prose_line, max_size=3))])
    assert find_marker(text, role) == expected


@given(marker_line(), st.lists(prose_line, min_size=WINDOW, max_size=WINDOW + 5))
def test_a_marker_at_visible_line_thirteen_or_later_is_not_read(
    marker: tuple[Role, str, str], lines: list[str]
) -> None:
    role, line, _ = marker
    assert find_marker("\n".join([*lines, line]), role) is None
