"""Reading the marker line an owner, reviewer or arbiter puts at the top of its output (DESIGN §3).

A marker is the first word of one of the first 12 visible lines: blank lines, fenced code,
`<internal>` blocks and quoted lines (`> …`, someone else's words) are not visible. It is written
in upper case (the aliases LGTM and Approved also in lower or mixed case, but then only when
nothing but punctuation or an emoji follows them), may be wrapped in `**bold**`, may follow a
`VERDICT` prefix and may be followed by punctuation or more text. A word inside prose is never a
marker, and neither is a marker followed by `?` (`Approved?`).

Each line is normalised first: Unicode NFKC (full-width `ＤＯＮＥ：` is `DONE:`, an ideographic
space a space), emphasis around a `VERDICT` label in any case (`**Verdict**:`, `__verdict__ —`). A
marker word ends where the next character is no letter, digit or combining mark of any script
(Unicode category L, N, M): `BLOCKED：…` and `APPROVED。` are markers, `DONE完了` and `DONE２` not.

When in doubt, not approved: a window with conflicting markers, or an approval made to depend
on something not yet done (`LGTM except …`, `Approved once …`, "as long as", `단, …`; the rule
and its table of condition forms per language are rooms/base/conditions.py's), reads
CHANGES_REQUESTED for the reviewer and ESCALATE for the arbiter; an approval whose clause says
something is still to do without saying the approval waits for it reads the same, with the doubt
"uncertain" (`read_marker` says which doubt it was).

The patterns avoid possessive quantifiers and atomic groups on groups: Debian's Python 3.11.2
mis-handles them (fixed upstream in 3.11.5). Only single characters and character classes are
possessive; the word after the decoration is cut in plain Python, so every line costs linear time.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from rooms.base.conditions import condition_of, opens_with_condition
from rooms.base.words import (
    APPROVED,
    ARBITER,
    BLOCKED,
    CHANGES_REQUESTED,
    DONE,
    ESCALATE,
    NEEDS_CONTEXT,
    OWNER,
    PROCEED,
    REVIEWER,
    VERDICTS,
    Role,
)

# The words themselves (roles, markers, verdicts) are rooms/base/words.py's; this module reads
# them. Both stay standard-library only, so that a bare interpreter can load them by their paths
# (tests/rooms/marker_probe.py checks Debian's Python 3.11.2 with them).

# Canonical marker by role for each word accepted as written (upper case), with any text after.
_EXACT: dict[str, dict[str, str]] = {
    OWNER: {
        DONE: DONE,
        "DONE_WITH_CONCERNS": DONE,
        NEEDS_CONTEXT: NEEDS_CONTEXT,
        BLOCKED: BLOCKED,
    },
    REVIEWER: {
        APPROVED: APPROVED,
        "LGTM": APPROVED,
        DONE: APPROVED,
        CHANGES_REQUESTED: CHANGES_REQUESTED,
        "DONE_WITH_CONCERNS": CHANGES_REQUESTED,
        NEEDS_CONTEXT: NEEDS_CONTEXT,
        BLOCKED: BLOCKED,
    },
    ARBITER: {v: v for v in VERDICTS},
}
# Aliases also accepted in lower or mixed case, by role, when they stand alone on their line.
_ANY_CASE: dict[str, dict[str, str]] = {
    OWNER: {},
    REVIEWER: {"LGTM": APPROVED, APPROVED: APPROVED},
    ARBITER: {},
}
# The reading that a doubt leads to, by role (the owner's first marker always stands).
_IN_DOUBT: dict[str, str] = {REVIEWER: CHANGES_REQUESTED, ARBITER: ESCALATE}
# The markers that let work go on unchallenged, and so may not be qualified.
_GO_AHEAD = (APPROVED, PROCEED)

WINDOW = 12

# A fence opens with three or more backticks or tildes (CommonMark); a backtick fence's info
# string may not contain a backtick, so "```DONE```" on one line is inline code, not a fence.
_FENCE = re.compile(r"^[ \t]*+(?P<fence>`{3,}+|~{3,}+)(?P<info>.*)$")
_QUOTE = re.compile(r"^[ \t]*+>")
# Optional heading/emphasis decoration, optional VERDICT prefix (in any case, in its own
# emphasis or not, then ":", "-", "—", "–" or a space, inside or outside the emphasis), then the
# run of letters and underscores that holds the candidate word. Lines are NFKC-normalised first.
_LINE = re.compile(
    r"""^\s*+(?:[#]++\s*+)?[*_]{0,3}+\s*+
        (?:(?i:VERDICT)(?![A-Za-z0-9]|_[A-Za-z0-9])[*_]{0,3}+\s*+(?::|—|–|-)?\s*+[*_]{0,3}+
        \s*+(?::|—|–|-)?\s*+[*_]{0,3}+\s*+)?
        (?P<run>[A-Za-z][A-Za-z_]*+)""",
    re.VERBOSE,
)
_QUESTION = ("?", "？")
_INTERNAL_OPEN = "<internal>"
_INTERNAL_CLOSE = "</internal>"


@dataclass(frozen=True)
class MarkerLine:
    """Where a marker was found: the canonical marker, the index of its line among the visible
    lines, and the rest of that line after the marker word (e.g. "— fix the test")."""

    marker: str
    index: int
    rest: str


@dataclass(frozen=True)
class Reading:
    """What a turn's output says: `marker` is the reading the engine acts on (None: no marker),
    `first` the first marker line as written, `seen` every distinct marker in the window in
    order, and `doubt` why the reading is not the first marker ("conflicting", "qualified",
    "uncertain": see conditions.py)."""

    marker: str | None
    first: MarkerLine | None = None
    seen: tuple[str, ...] = ()
    doubt: str | None = None


LineKind = Literal["text", "code", "internal", "quote"]


def classify_lines(text: str) -> Iterator[tuple[str, LineKind]]:
    """Every line with what it is: `text` (its visible part, `<internal>` spans removed; may be
    blank), `code` (fenced code, fence lines included), `internal` (inside an `<internal>`
    block; an unterminated block runs to the end of the text) or `quote` (a `> ` line)."""
    fence: str | None = None  # the opening fence while inside fenced code
    in_internal = False
    for raw in text.splitlines():
        line = raw
        if in_internal:
            if _QUOTE.match(line):
                # A quote's `</internal>` is someone else's words: it closes nothing, so what
                # follows it on the quoted line can never surface as this author's marker.
                yield raw, "internal"
                continue
            end = line.find(_INTERNAL_CLOSE)
            if end < 0:
                yield raw, "internal"
                continue
            in_internal = False
            line = line[end + len(_INTERNAL_CLOSE) :]
        if fence is not None:
            yield line, "code"
            if _closes(line, fence):
                fence = None
            continue
        opened_fence = _opens_fence(line)
        if opened_fence is not None:
            fence = opened_fence
            yield line, "code"
            continue
        if _QUOTE.match(line):
            yield line, "quote"  # someone else's words: even an `<internal>` in it is theirs
            continue
        line, opened = _strip_internal(line)
        yield line, "text"
        if opened:
            in_internal = True


def visible_lines(text: str, *, keep_blank: bool = False) -> Iterator[str]:
    """Lines outside fenced code, `<internal>` blocks and quotes, in order.

    Blank lines are dropped unless `keep_blank` (callers that split paragraphs need them); a
    hidden block then reads as one blank line, so it still separates the paragraphs around it.
    """
    return visible(classify_lines(text), keep_blank=keep_blank)


def visible(lines: Iterable[tuple[str, LineKind]], *, keep_blank: bool = False) -> Iterator[str]:
    """`visible_lines` of lines already classified (e.g. a part of them)."""
    hidden = False
    for line, kind in lines:
        if kind != "text":
            hidden = True
            continue
        if hidden and keep_blank:
            yield ""
        hidden = False
        if line.strip():
            yield line
        elif keep_blank:
            yield ""


def _opens_fence(line: str) -> str | None:
    m = _FENCE.match(line)
    if m is None:
        return None
    fence = m.group("fence")
    if fence[0] == "`" and "`" in m.group("info"):
        return None
    return fence


def _closes(line: str, fence: str) -> bool:
    """A closing fence: the same character, at least as long, and nothing else on the line."""
    stripped = line.strip()
    return (
        len(stripped) >= len(fence)
        and stripped[0] == fence[0]
        and stripped == fence[0] * len(stripped)
    )


def _strip_internal(line: str) -> tuple[str, bool]:
    """The line without its `<internal>` spans, and whether one opens here and stays open."""
    while True:
        start = line.find(_INTERNAL_OPEN)
        if start < 0:
            return line, False
        end = line.find(_INTERNAL_CLOSE, start)
        if end < 0:
            return line[:start], True
        line = line[:start] + line[end + len(_INTERNAL_CLOSE) :]


def _word(run: str) -> str:
    """The marker candidate at the start of `run`: letters joined by single underscores, so
    that `DONE__` (bold) gives DONE and STEP_DONE stays one (unknown) word."""
    end = 0
    while True:
        while end < len(run) and run[end] != "_":
            end += 1
        if end + 1 < len(run) and run[end] == "_" and run[end + 1] != "_":
            end += 1  # a single underscore between letters: the word goes on
            continue
        return run[:end]


def _canonical(line: str, role: Role) -> tuple[str, str] | None:
    """The canonical marker this line starts with for `role`, and the rest of the line."""
    line = unicodedata.normalize("NFKC", line)
    m = _LINE.match(line)
    if m is None:
        return None
    word = _word(m.group("run"))
    end = m.start("run") + len(word)
    if end < len(line) and _in_word(line[end]):
        return None  # a longer word ("DONEX", "DONE9", "DONE完了"): glued to other text
    after = line[end:]
    if after.lstrip(" \t*_").startswith(_QUESTION):
        return None  # "Approved?" asks, it does not decide
    rest = _lstrip_separators(after).rstrip().rstrip("*_").rstrip()
    marker = _EXACT[role].get(word)
    if marker is None:
        marker = _ANY_CASE[role].get(word.upper())
        if marker is None:
            return None
        # "Approved migrations are…" is prose; "approved." or "lgtm 👍" is a marker, and so is
        # "Approved once …", read as the qualified approval it is.
        if any(ch.isalnum() for ch in after) and not opens_with_condition(rest):
            return None
    return marker, rest


def _in_word(ch: str) -> bool:
    """Whether `ch` continues a word: a letter, digit or combining mark of any script."""
    return unicodedata.category(ch)[0] in "LNM"


def _lstrip_separators(text: str) -> str:
    """`text` without the spaces, punctuation and emphasis that stand between a marker word and
    what follows it ("REVISE — fix", "**DONE**: ok", "DONE：テスト"), of any script."""
    start = 0
    while start < len(text) and unicodedata.category(text[start])[0] in "PZ":
        start += 1
    return text[start:]


def _markers(text: str, role: Role) -> Iterator[tuple[MarkerLine, str | None]]:
    """Every marker line in the window, with the visible line that follows it (or None)."""
    lines = list(_window(text))
    for index, line in enumerate(lines):
        found = _canonical(line, role)
        if found is not None:
            following = lines[index + 1] if index + 1 < len(lines) else None
            yield MarkerLine(marker=found[0], index=index, rest=found[1]), following


def _window(text: str) -> Iterator[str]:
    for index, line in enumerate(visible_lines(text)):
        if index >= WINDOW:
            return
        yield line


def _condition(found: MarkerLine, following: str | None) -> str | None:
    """The doubt an approval's attached clause raises ("qualified", "uncertain") or None: the
    clause is the rest of the marker line and the visible line right after it (conditions.py)."""
    if found.marker not in _GO_AHEAD:
        return None
    readings = [condition_of(found.rest)]
    if following is not None:
        readings.append(condition_of(unicodedata.normalize("NFKC", following), next_line=True))
    if "conditional" in readings:
        return "qualified"
    return "uncertain" if "uncertain" in readings else None


def read_marker(text: str, role: Role) -> Reading:
    """The marker the engine acts on for `role`, with the when-in-doubt rules applied."""
    found = list(_markers(text, role))
    if not found:
        return Reading(marker=None)
    first = found[0][0]
    seen = tuple(dict.fromkeys(line.marker for line, _ in found))
    doubt = _IN_DOUBT.get(role)
    if doubt is not None:
        if len(seen) > 1:
            return Reading(marker=doubt, first=first, seen=seen, doubt="conflicting")
        doubts = [_condition(line, following) for line, following in found]
        for why in ("qualified", "uncertain"):
            if why in doubts:
                return Reading(marker=doubt, first=first, seen=seen, doubt=why)
    return Reading(marker=first.marker, first=first, seen=seen)


def locate_marker(text: str, role: Role) -> MarkerLine | None:
    """The first marker line for `role` with its position (as written, before the doubt rules),
    or None when the visible window holds none."""
    return next((line for line, _ in _markers(text, role)), None)


Classified = list[tuple[str, LineKind]]


def split_at_marker(text: str, role: Role) -> tuple[MarkerLine | None, Classified, Classified]:
    """The first marker, the classified lines before its line and the ones after it. Without a
    marker: None, nothing before, every line after."""
    found = locate_marker(text, role)
    lines = list(classify_lines(text))
    if found is not None:
        seen = -1
        for position, (line, kind) in enumerate(lines):
            if kind == "text" and line.strip():
                seen += 1
                if seen == found.index:
                    return found, lines[:position], lines[position + 1 :]
    return None, [], lines


def find_marker(text: str, role: Role) -> str | None:
    """The canonical marker for `role` after the when-in-doubt rules, or None when the visible
    window holds none."""
    return read_marker(text, role).marker
