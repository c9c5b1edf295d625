"""The reviewer's open findings, read out of its output (DESIGN §4: repeated findings).

The reviewer is asked to list its findings one per line, so list items (bullets, numbers,
checkboxes) are the findings. A reviewer that writes prose instead gets its paragraphs after the
marker line taken as findings. Fenced code and `<internal>` blocks are not findings: they are
evidence or private notes, and their noise would hide a repeat.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

from rooms.judge.markers import Role, split_at_marker, visible
from rooms.judge.noise import normalize

# Bullets, "1." / "1)" / "(1)" numbering and "a)" lettering, then the finding itself.
_ITEM = re.compile(r"^\s*+(?:[-*+•]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z]\))\s++(?P<body>\S.*)$")
_CHECKBOX = re.compile(r"^\[[ xX]\]\s*+")
_HEADING = re.compile(r"^\s*+#")
# Bounds that keep a pathological output cheap to compare; real findings lists are far smaller.
MAX_FINDINGS = 200
MAX_FINDING_CHARS = 1000
# difflib is quadratic on repetitive text: compare at most this many words of each list (a
# real findings list is far shorter; beyond it the tail is not compared).
_MAX_COMPARED_WORDS = 800


def after_marker(text: str, role: Role) -> tuple[str, list[str]]:
    """The rest of the marker line and the visible lines after it (blank lines kept).

    With no marker line, the rest is empty and every visible line counts.
    """
    found, _, after = split_at_marker(text, role)
    return (found.rest if found else ""), list(visible(after, keep_blank=True))


def paragraphs(lines: Sequence[str]) -> list[str]:
    """Runs of non-blank lines joined with spaces; heading lines are left out."""
    result: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip() and not _HEADING.match(line):
            current.append(line.strip())
        elif current:
            result.append(" ".join(current))
            current = []
    return result


def list_items(lines: Sequence[str]) -> list[str]:
    """The list items among `lines` (bullets, numbers, checkboxes), with indented continuation
    lines joined to their item."""
    items: list[str] = []
    continuing = False
    for line in lines:
        item = _ITEM.match(line)
        if item is not None:
            items.append(_CHECKBOX.sub("", item.group("body")).strip())
            continuing = True
        elif continuing and line[:1] in (" ", "\t") and line.strip():
            items[-1] = f"{items[-1]} {line.strip()}"
        else:
            continuing = False
    return [item for item in items if item]


def findings(text: str) -> list[str]:
    """The reviewer's findings: its list items, else its paragraphs after the marker line."""
    rest, lines = after_marker(text, "reviewer")
    items = list_items(lines) or paragraphs([rest, *lines])
    return [item[:MAX_FINDING_CHARS] for item in items[:MAX_FINDINGS]]


def similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """How alike two findings lists are, 0..1, ignoring order and run-to-run noise.

    Compared word by word (difflib ratio over the normalized, sorted findings), so a finding
    reworded in one word still counts as the same finding, and two lists that share nothing
    score near 0. Two empty lists are identical (1.0).
    """
    return _matcher(a, b).ratio()


def similar(a: Sequence[str], b: Sequence[str], threshold: float) -> bool:
    """similarity(a, b) >= threshold, skipping the costly ratio when a cheap upper bound
    (shared words regardless of order) already falls short."""
    matcher = _matcher(a, b)
    return matcher.quick_ratio() >= threshold and matcher.ratio() >= threshold


def _matcher(a: Sequence[str], b: Sequence[str]) -> SequenceMatcher[str]:
    return SequenceMatcher(None, _words(a), _words(b), autojunk=False)


def _words(items: Sequence[str]) -> list[str]:
    return " ".join(sorted(normalize(item) for item in items)).split()[:_MAX_COMPARED_WORDS]
