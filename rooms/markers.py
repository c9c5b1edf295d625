"""Reading the marker line an owner, reviewer or arbiter puts at the top of its output (DESIGN §3).

A marker is the first word of one of the first 12 visible lines: blank lines, fenced code and
`<internal>` blocks are not visible. It is written in upper case (the aliases LGTM and Approved
in any case), may be wrapped in `**bold**`, may follow a `VERDICT` prefix and may be followed by
punctuation or more text. A word inside prose is never a marker. These functions never raise.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# Optional bold/heading decoration, optional VERDICT prefix (":", "-", "—", "–" or space), then
# the candidate word. The word must be followed by the end of line, punctuation or a space.
_LINE = re.compile(
    r"""^\s*(?:[#>]+\s*)?(?:\*\*|__)?\s*
        (?:VERDICT\s*(?::|—|–|-)?\s*(?:\*\*|__)?\s*)?
        (?P<word>[A-Za-z_]+)
        (?P<after>$|[\s*_.,:;!?()\-—–]) """,
    re.VERBOSE,
)


def visible_lines(text: str) -> Iterator[str]:
    """Non-blank lines outside fenced code and `<internal>` blocks, in order."""
    in_fence: str | None = None
    in_internal = False
    for raw in text.splitlines():
        line = raw
        if in_internal:
            end = line.find("</internal>")
            if end < 0:
                continue
            in_internal = False
            line = line[end + len("</internal>") :]
        if in_fence is not None:
            if line.strip().startswith(in_fence):
                in_fence = None
            continue
        fence = _FENCE.match(line)
        if fence:
            in_fence = fence.group(1)[0] * 3
            continue
        line, opened = _strip_internal(line)
        if line.strip():
            yield line
        if opened:
            in_internal = True


def _strip_internal(line: str) -> tuple[str, bool]:
    """The line without its `<internal>` spans, and whether one opens here and stays open."""
    while True:
        start = line.find("<internal>")
        if start < 0:
            return line, False
        end = line.find("</internal>", start)
        if end < 0:
            return line[:start], True
        line = line[:start] + line[end + len("</internal>") :]


def _first_word(line: str) -> str | None:
    m = _LINE.match(line)
    return m.group("word") if m else None


def find_marker(text: str, role: Role) -> str | None:
    """The canonical marker for `role`, or None when the visible window holds none."""
    exact = _EXACT[role]
    any_case = _ANY_CASE[role]
    for index, line in enumerate(visible_lines(text)):
        if index >= WINDOW:
            break
        word = _first_word(line)
        if word is None:
            continue
        if word in exact:
            return exact[word]
        if word.upper() in any_case:
            return any_case[word.upper()]
    return None


def find_verdict(text: str) -> str | None:
    """PROCEED / REVISE / RESET / ESCALATE, or None when unreadable (callers then escalate)."""
    return find_marker(text, "arbiter")
