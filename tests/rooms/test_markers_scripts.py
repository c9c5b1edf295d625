"""Properties of the text path over full-width forms and mixed scripts (issue 26, DESIGN §3):
a marker reads the same in full-width characters, ends at any punctuation or space of any script,
never reads when glued to a letter or digit of any script, and an approval carrying a condition
form of any language in the table is never an approval."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from rooms.base import conditions
from rooms.base.markers import find_marker, read_marker
from rooms.base.words import Role
from rooms.judge.findings import similar
from tests.rooms.test_markers import marker_line

# Letters of scripts reviewers write in: Latin with accents, Cyrillic, Hangul, kana, Han.
SCRIPTS = "éüßçñøЖжДдПп가나다라마바사アイウエオあいうえお漢字期限再試行超时重试"
# Separators of other scripts that end a marker word: full-width and ideographic punctuation.
WIDE_SEPARATORS = ["：", "\u3000", "。", "、", "！", "，", "；", " — ", "）"]


def full_width(text: str) -> str:
    """`text` with every printable ASCII character in its full-width form, spaces ideographic."""
    return "".join(
        "\u3000" if ch == " " else chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in text
    )


@given(marker_line())
def test_a_marker_line_in_full_width_reads_the_same(marker: tuple[Role, str, str]) -> None:
    role, line, _ = marker
    assert find_marker(full_width(line), role) == find_marker(line, role)


@given(
    st.sampled_from(["DONE", "BLOCKED", "NEEDS_CONTEXT"]),
    st.sampled_from(WIDE_SEPARATORS),
    st.text(alphabet=SCRIPTS + " 0123456789", max_size=30),
)
def test_an_owner_marker_ends_at_punctuation_of_any_script(word: str, sep: str, tail: str) -> None:
    assert find_marker(f"{word}{sep}{tail}", "owner") == word
    assert find_marker(full_width(word) + sep + tail, "owner") == word


def _word_character(ch: str) -> bool:
    # What the parser sees after NFKC: a character that still continues a word there.
    normal = unicodedata.normalize("NFKC", ch)
    return bool(normal) and unicodedata.category(normal[0])[0] in "LNM"


@given(
    st.sampled_from(["DONE", "BLOCKED", "APPROVED", "CHANGES_REQUESTED", "REVISE"]),
    st.characters(categories=("Lu", "Ll", "Lo", "Nd", "Mn")).filter(_word_character),
    st.text(alphabet=SCRIPTS + " .:", max_size=20),
)
def test_a_marker_glued_to_a_letter_of_any_script_is_never_read(
    word: str, glued: str, tail: str
) -> None:
    line = f"{word}{glued}{tail}"
    for role in ("owner", "reviewer", "arbiter"):
        assert find_marker(line, role) is None


CONDITION_ONLY = sorted({f for forms in conditions._FORMS.values() for f in forms[1]})
OPENERS = sorted({f for forms in conditions._FORMS.values() for f in forms[0]})


@given(
    st.sampled_from(["APPROVED", "LGTM", "**APPROVED**", "ＡＰＰＲＯＶＥＤ"]),
    st.sampled_from([" ", ", ", " — ", "：", "。", "\u3000"]),
    st.sampled_from(CONDITION_ONLY),
    st.text(alphabet=SCRIPTS + " ", max_size=20),
    st.text(alphabet=SCRIPTS + " ", max_size=20),
    st.booleans(),
)
def test_a_condition_of_any_language_is_never_an_approval(
    word: str, sep: str, form: str, before: str, after: str, next_line: bool
) -> None:
    clause = f"{before} {form} {after}"
    text = f"{word}\n{clause}" if next_line else f"{word}{sep}{clause}"
    assert find_marker(text, "reviewer") == "CHANGES_REQUESTED"
    assert find_marker(text.replace(word, "PROCEED"), "arbiter") == "ESCALATE"


@given(
    st.sampled_from(["APPROVED", "LGTM", "ＡＰＰＲＯＶＥＤ"]),
    st.sampled_from([" ", ", ", " — ", "：", "\u3000"]),
    st.sampled_from(OPENERS),
    st.text(alphabet=SCRIPTS + " ", max_size=20),
)
def test_an_approval_that_opens_on_a_condition_is_never_an_approval(
    word: str, sep: str, form: str, tail: str
) -> None:
    reading = read_marker(f"{word}{sep}{form} {tail}", "reviewer")
    assert reading.marker == "CHANGES_REQUESTED"
    assert reading.doubt == "qualified"


FINDING_TEXT = st.text(alphabet=SCRIPTS, min_size=8, max_size=40)


@given(
    st.lists(FINDING_TEXT, min_size=1, max_size=6, unique=True),
    st.lists(st.integers(1, 9999), min_size=12, max_size=12),
    st.sampled_from(["x.py:{n}", "第{n}行", "{n} 行目", "{n}행", "line {n}"]),
)
def test_findings_that_only_move_lines_are_the_same_in_any_script(
    items: list[str], lines: list[int], where: str
) -> None:
    earlier = [f"{where.format(n=lines[i])} {item}" for i, item in enumerate(items)]
    later = [f"{where.format(n=lines[-1 - i])} {item}" for i, item in enumerate(items)]
    later.reverse()
    assert similar(earlier, later, 0.9)


@given(st.lists(FINDING_TEXT, min_size=1, max_size=8, unique=True), st.data())
def test_a_list_that_loses_or_gains_a_finding_is_progress(
    items: list[str], data: st.DataObject
) -> None:
    dropped = data.draw(st.integers(0, len(items) - 1))
    fewer = items[:dropped] + items[dropped + 1 :]
    assert not similar(items, fewer, 0.9)
    assert not similar(fewer, items, 0.9)
