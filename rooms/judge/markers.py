"""Reading the marker line an owner, reviewer or arbiter puts at the top of its output (DESIGN §3).

A marker is the first word of one of the first 12 visible lines: blank lines, fenced code and
`<internal>` blocks are not visible. It is written in upper case (the aliases LGTM and Approved
in any case), may be wrapped in `**bold**`, may follow a `VERDICT` prefix and may be followed by
punctuation or more text. A word inside prose is never a marker. These functions never raise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

Role = Literal["owner", "reviewer", "arbiter"]

OWNER_MARKERS = ("DONE", "NEEDS_CONTEXT", "BLOCKED")
REVIEWER_MARKERS = ("APPROVED", "CHANGES_REQUESTED", "NEEDS_CONTEXT", "BLOCKED")
VERDICTS = ("PROCEED", "REVISE", "RESET", "ESCALATE")

# Canonical marker by role for each word accepted as written (upper case).
_EXACT: dict[str, dict[str, str]] = {
    "owner": {
        "DONE": "DONE",
        "DONE_WITH_CONCERNS": "DONE",
        "NEEDS_CONTEXT": "NEEDS_CONTEXT",
        "BLOCKED": "BLOCKED",
    },
    "reviewer": {
        "APPROVED": "APPROVED",
        "DONE": "APPROVED",
        "CHANGES_REQUESTED": "CHANGES_REQUESTED",
        "DONE_WITH_CONCERNS": "CHANGES_REQUESTED",
        "NEEDS_CONTEXT": "NEEDS_CONTEXT",
        "BLOCKED": "BLOCKED",
    },
    "arbiter": {v: v for v in VERDICTS},
}
# Aliases accepted in any case, by role.
_ANY_CASE: dict[str, dict[str, str]] = {
    "owner": {},
    "reviewer": {"LGTM": "APPROVED", "APPROVED": "APPROVED"},
    "arbiter": {},
}

WINDOW = 12

# A fence opens with three or more backticks or tildes (CommonMark); a backtick fence's info
# string may not contain a backtick, so "```DONE```" on one line is inline code, not a fence.
_FENCE = re.compile(r"^[ \t]*+(?P<fence>`{3,}+|~{3,}+)(?P<info>.*)$")
# Optional heading/quote/bold decoration, optional VERDICT prefix (in any case, then ":", "-",
# "—", "–" or a space), then the candidate word: letters joined by single underscores, so that
# `__DONE__` reads DONE and STEP_DONE stays one (unknown) word. The word must be followed by the
# end of the line, punctuation or a space. Quantifiers are possessive: a line of thousands of
# spaces must cost linear time, not quadratic backtracking.
_LINE = re.compile(
    r"""^\s*+(?:[#>]++\s*+)?(?:\*\*|__)?\s*+
        (?:(?i:VERDICT)\s*+(?::|—|–|-)?\s*+(?:\*\*|__)?\s*+)?
        (?P<word>[A-Za-z]++(?:_[A-Za-z]++)*+)
        (?P<after>$|[\s*_.,:;!?()\-—–]) """,
    re.VERBOSE,
)
# What may stand between a marker word and the text after it ("REVISE — fix", "**DONE**: ok").
_SEPARATORS = " \t*_.,:;!?-—–"
_INTERNAL_OPEN = "<internal>"
_INTERNAL_CLOSE = "</internal>"


@dataclass(frozen=True)
class MarkerLine:
    """Where a marker was found: the canonical marker, the index of its line among the visible
    lines, and the rest of that line after the marker word (e.g. "— fix the test")."""

    marker: str
    index: int
    rest: str


LineKind = Literal["text", "code", "internal"]


def classify_lines(text: str) -> Iterator[tuple[str, LineKind]]:
    """Every line with what it is: `text` (its visible part, `<internal>` spans removed; may be
    blank), `code` (fenced code, fence lines included) or `internal` (inside an `<internal>`
    block; an unterminated block runs to the end of the text)."""
    fence: str | None = None  # the opening fence while inside fenced code
    in_internal = False
    for raw in text.splitlines():
        line = raw
        if in_internal:
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
        line, opened = _strip_internal(line)
        yield line, "text"
        if opened:
            in_internal = True


def visible_lines(text: str, *, keep_blank: bool = False) -> Iterator[str]:
    """Lines outside fenced code and `<internal>` blocks, in order.

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


def _canonical(line: str, role: Role) -> tuple[str, str] | None:
    """The canonical marker this line starts with for `role`, and the rest of the line."""
    m = _LINE.match(line)
    if m is None:
        return None
    word = m.group("word")
    marker = _EXACT[role].get(word) or _ANY_CASE[role].get(word.upper())
    if marker is None:
        return None
    rest = line[m.end("word") :].lstrip(_SEPARATORS).rstrip().rstrip("*_").rstrip()
    return marker, rest


def locate_marker(text: str, role: Role) -> MarkerLine | None:
    """The marker for `role` with its position, or None when the visible window holds none."""
    try:
        for index, line in enumerate(visible_lines(text)):
            if index >= WINDOW:
                break
            found = _canonical(line, role)
            if found is not None:
                return MarkerLine(marker=found[0], index=index, rest=found[1])
    except Exception:  # a parser of agent output must never take the engine down
        return None
    return None


Classified = list[tuple[str, LineKind]]


def split_at_marker(text: str, role: Role) -> tuple[MarkerLine | None, Classified, Classified]:
    """The marker, the classified lines before its line and the ones after it. Without a
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
    """The canonical marker for `role`, or None when the visible window holds none."""
    found = locate_marker(text, role)
    return found.marker if found else None


def find_verdict(text: str) -> str | None:
    """PROCEED / REVISE / RESET / ESCALATE, or None when unreadable (callers then escalate)."""
    return find_marker(text, "arbiter")
