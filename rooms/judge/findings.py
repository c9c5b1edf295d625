"""The reviewer's open findings, read out of its output (DESIGN §3, §4: repeated findings).

The reviewer is asked to list its findings one per line, numbered `F1`, `F2`, …, reusing an id
for a finding raised again; list items (bullets, numbers, checkboxes) and lines led by an id are
the findings. A reviewer that writes prose instead gets its paragraphs after the marker line
taken as findings. Only open findings count: checked boxes (`[x]`), items under a "Resolved" /
"Fixed" heading or marked ✅, fenced code and logs, quotes, `<internal>` notes and
acknowledgement prose ("Thanks, the parser fix works") are not findings, and their noise would
hide a repeat.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

from rooms.base.markers import split_at_marker, visible
from rooms.base.words import REVIEWER, Role
from rooms.judge.noise import normalize

# Bullets, "1." / "1)" / "(1)" numbering and "a)" lettering, then the finding itself.
_ITEM = re.compile(r"^\s*+(?:[-*+•]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z]\))\s++(?P<body>\S.*)$")
# A line led by a finding id ("F2: …", "**F2** (still open) …", "[F2] …") is an item too.
_ID_LINE = re.compile(r"^\s*+(?P<body>(?:\*\*|__)?\[?F\d{1,3}\b.*)$")
_ID = re.compile(r"^(?:\*\*|__)?\[?(?P<id>F\d{1,3})\b")
_CHECKBOX = re.compile(r"^\[(?P<mark>[ xX✓✔])\]\s*+")
_HEADING = re.compile(r"^\s*+#")
# A section heading: "## Resolved", "**Fixed:**", "Still open:" (a short line ending in ":").
_SECTION = re.compile(
    r"^\s*+(?:#{1,6}\s*+(?P<h>.+)|(?P<label>[^\s:][^:]{0,40}):\s*+(?:\*\*|__)?"
    r"|(?:\*\*|__)(?P<bold>[^*_:]{1,40})(?:\*\*|__):?)\s*+$"
)
_RESOLVED_SECTION = re.compile(
    r"^[\W_]*(?:resolved|fixed|addressed|done|closed|verified|no longer)", re.IGNORECASE
)
_RESOLVED_ITEM = re.compile(
    r"✅|✔|☑|^~~.*~~$|\((?:resolved|fixed|addressed|done)\)|^(?:\*\*)?(?:resolved|fixed)\b",
    re.IGNORECASE,
)
# Prose that acknowledges rather than objects, when prose paragraphs stand in for a list.
_ACKNOWLEDGEMENT = re.compile(
    r"^[\W_]*(?:thanks|thank you|good|great|nice|looks good|agreed|i agree|acknowledged|"
    r"confirmed|verified|✅)\b",
    re.IGNORECASE,
)
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
    """The list items among `lines` (bullets, numbers, checkboxes, id-led lines), with indented
    continuation lines joined to their item."""
    return [text for text, _ in _items(lines)]


def _items(lines: Sequence[str]) -> list[tuple[str, bool]]:
    """Each list item with whether it is still open (not checked, not marked resolved, not
    under a "Resolved" / "Fixed" heading)."""
    items: list[tuple[str, bool]] = []
    continuing = False
    resolved_section = False
    for line in lines:
        item = _ITEM.match(line) or _ID_LINE.match(line)
        if item is not None:
            body = item.group("body")
            box = _CHECKBOX.match(body)
            text = body[box.end() :].strip() if box else body.strip()
            checked = box is not None and box.group("mark") != " "
            resolved = checked or resolved_section or _RESOLVED_ITEM.search(text) is not None
            items.append((text, not resolved))
            continuing = True
            continue
        section = _SECTION.match(line)
        if section is not None:
            heading = section.group("h") or section.group("label") or section.group("bold")
            resolved_section = _RESOLVED_SECTION.match(heading) is not None
            continuing = False
        elif continuing and line[:1] in (" ", "\t") and line.strip() and items:
            text, still_open = items[-1]
            items[-1] = (f"{text} {line.strip()}", still_open)
        else:
            continuing = False
    return [(text, still_open) for text, still_open in items if text]


def findings(text: str) -> list[str]:
    """The reviewer's open findings: its open list items, else its paragraphs after the marker
    line that are not acknowledgements. A list with every item resolved has no open finding."""
    rest, lines = after_marker(text, REVIEWER)
    items = _items(lines)
    if items:
        found = [item for item, still_open in items if still_open]
    else:
        found = [p for p in paragraphs([rest, *lines]) if not _ACKNOWLEDGEMENT.match(p)]
    return [item[:MAX_FINDING_CHARS] for item in found[:MAX_FINDINGS]]


def finding_id(item: str) -> str | None:
    """The reviewer's id of a finding ("F2"), or None when it has none."""
    m = _ID.match(item.strip())
    return m.group("id") if m else None


def finding_ids(items: Sequence[str]) -> frozenset[str] | None:
    """The ids of a findings list, or None unless every finding has one (then the text is
    compared instead)."""
    ids = [finding_id(item) for item in items]
    if not ids or any(i is None for i in ids):
        return None
    return frozenset(i for i in ids if i is not None)


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
