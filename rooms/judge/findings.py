"""The reviewer's open findings, read out of its output (DESIGN §3, §4: repeated findings).

The reviewer is asked to list its findings one per line, numbered `F1`, `F2`, …, reusing an id
for a finding raised again; list items (bullets, numbers, checkboxes) and lines led by an id are
the findings. A reviewer that writes prose instead gets its paragraphs after the marker line
taken as findings. Only open findings count: checked boxes (`[x]`, `[✓]`, ☑), items under a
"Resolved" / "Fixed" heading or marked ✅ or `(fixed)`, fenced code and logs, quotes, `<internal>`
notes and acknowledgement prose ("Thanks, the parser fix works") are not findings, and their noise
would hide a repeat. The headings and status words are read in the reviewer's language too
(`## Erledigt`, `(corrigé)`, `## 해결됨`, `（修正済み）`, `**已解决：**`, `## Решено`…; the table is
`_RESOLVED_WORDS`), after Unicode NFKC.

Two findings lists are compared one to one (`similar`): each open finding is matched to at most
one earlier finding, by script-aware tokens (a word of a spaced script, or one Han or kana
character, which those scripts write without spaces) with the digit runs of positions masked
(`:12`, `line 12`, `Zeile 12`, `第12行`, `12 行目`, `12행`), so a finding that only moved lines is
the same finding in every script; any closed or new finding is progress. Other numbers are kept:
`report_1.py` and `report_2.py`, or "section 1" and "section 2", are different findings.
"""

from __future__ import annotations

import re
import unicodedata
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
_CHECKBOX = re.compile(r"^(?:\[(?P<mark>[ xX✓✔])\]|(?P<glyph>[☐☑☒]))\s*+")
_HEADING = re.compile(r"^\s*+#")
# A section heading: "## Resolved", "**Fixed:**", "Still open:" (a short line ending in ":").
_SECTION = re.compile(
    r"^\s*+(?:#{1,6}\s*+(?P<h>.+)|(?P<label>[^\s:][^:]{0,40}):\s*+(?:\*\*|__)?"
    r"|(?:\*\*|__)(?P<bold>[^*_:]{1,40})(?:\*\*|__):?)\s*+$"
)
# "Resolved" in the languages reviewers write: headings that open with one of these, and
# items marked with one in brackets ("F1 (behoben) …"). Open/unresolved words (offen, 未解決,
# 미해결) do not start with them, so they never match at a heading's start.
_RESOLVED_WORDS = (
    "resolved|fixed|addressed|done|closed|verified|no longer|"  # en
    "erledigt|behoben|gelöst|geschlossen|"  # de
    "résolus?|résolues?|corrigée?s?|réglée?s?|traitée?s?|"  # fr
    "resuelt[oa]s?|corregid[oa]s?|arreglad[oa]s?|"  # es
    "resolvid[oa]s?|corrigid[oa]s?|"  # pt
    "risolt[oi]|correttt?[oi]|sistemat[oi]|"  # it
    "opgelost|verholpen|"  # nl
    "решено|исправлено|закрыто|устранено|"  # ru
    "해결됨|해결 완료|수정됨|수정 완료|완료|"  # ko
    "解決済み?|修正済み?|対応済み?|完了|"  # ja
    "已解决|已修复|已处理|已完成"  # zh
)
_RESOLVED_SECTION = re.compile(rf"^[\W_]*(?:{_RESOLVED_WORDS})", re.IGNORECASE)
_RESOLVED_ITEM = re.compile(
    rf"✅|✔|☑|^~~.*~~$|\(\s*(?:{_RESOLVED_WORDS})\s*\)|^(?:\*\*)?(?:resolved|fixed)\b",
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
# difflib is quadratic on repetitive text: compare at most this many tokens of each finding
# (a real finding is far shorter; beyond it the tail is not compared).
_MAX_COMPARED_TOKENS = 120
# And at most this many comparisons of two findings per pair of lists (see `_pairs`).
_MAX_RATIOS = 4000
_DIGITS = re.compile(r"\d+")
# A position in a file, whose digits change as the code moves: "x.py:12:4", "#L12", "line 12",
# "lines 3-5", and the same in the reviewers' languages.
_POSITION = re.compile(
    r":\d+(?::\d+)?|#?\bL\d+"
    r"|(?i:\b(?:lines?|ln|zeilen?|lignes?|l[ií]neas?|linhas?|righe|riga|regels?|строк[аеиу]?)"
    r"\.?\s*\d+(?:\s*[-–]\s*\d+)?)"
    r"|第\s*\d+\s*行|\d+\s*(?:行目?|행|번째\s*줄|줄)"
)
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# A Han or kana character alone, or a run of word characters of any other script.
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")


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
    for raw in lines:
        line = unicodedata.normalize("NFKC", raw)  # （修正済み）, full-width ids and colons
        item = _ITEM.match(line) or _ID_LINE.match(line)
        if item is not None:
            body = item.group("body")
            box = _CHECKBOX.match(body)
            text = body[box.end() :].strip() if box else body.strip()
            checked = box is not None and box.group("mark") not in (
                " ",
                None,
            )
            checked = checked or (box is not None and box.group("glyph") in ("☑", "☒"))
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

    The findings are matched one to one (`_pairs`), by script-aware tokens with positions
    masked; the score is the matched pairs' summed ratio over the mean length of the two lists,
    so an unmatched finding on either side lowers it. Two empty lists are identical (1.0).
    """
    if not a and not b:
        return 1.0
    pairs = _pairs(_texts(a), _texts(b), 0.0, every=False)
    return 2 * sum(pairs or []) / (len(a) + len(b))


def similar(a: Sequence[str], b: Sequence[str], threshold: float) -> bool:
    """Whether `b` repeats `a`: as many findings, each finding of `b` matched to its own
    finding of `a` at least `threshold` alike (so one closed or one new finding is progress)."""
    if len(a) != len(b):
        return False
    pairs = _pairs(_texts(a), _texts(b), threshold, every=True)
    return pairs is not None and len(pairs) == len(b)


def _texts(items: Sequence[str]) -> list[tuple[str, ...]]:
    """What is compared of each finding: its tokens, normalised, positions' digits masked."""
    return [_tokens(item) for item in items]


def _tokens(item: str) -> tuple[str, ...]:
    # Positions first: normalize masks large numbers its own way ("x.py:1000" must match ":12").
    text = _POSITION.sub(lambda m: _DIGITS.sub("0", m.group()), unicodedata.normalize("NFKC", item))
    text = normalize(text)
    return tuple(_TOKEN.findall(text)[:_MAX_COMPARED_TOKENS])


Tokens = tuple[str, ...]


def _pairs(
    a: list[Tokens], b: list[Tokens], threshold: float, *, every: bool
) -> list[float] | None:
    """The ratios of a one-to-one matching of `b`'s findings to `a`'s, greedy by best ratio,
    each at least `threshold` (pairs below it are left unmatched). With `every`, None as soon as
    one finding of `b` has no match at all. Equal findings pair first, at no cost; beyond
    `_MAX_RATIOS` costly comparisons the rest of `b` stays unmatched (a pathological list is
    then not a repeat: the round cap and stagnation still bound the task)."""
    candidates: list[tuple[float, int, int]] = []
    unmatched_a = list(range(len(a)))
    by_text: dict[Tokens, list[int]] = {}
    for i in unmatched_a:
        by_text.setdefault(a[i], []).append(i)
    rest_b: list[int] = []
    ratios: list[float] = []
    for j, later in enumerate(b):
        same = by_text.get(later)
        if same:
            same.pop()
            ratios.append(1.0)
        else:
            rest_b.append(j)
    left_a = [i for indices in by_text.values() for i in indices]
    budget = _MAX_RATIOS
    for j in rest_b:
        if budget <= 0:
            break
        matcher: SequenceMatcher[str] = SequenceMatcher(None, autojunk=False)
        matcher.set_seq2(b[j])  # b's token counts are computed once for every a
        found = False
        for i in left_a:
            if budget <= 0:
                if every:
                    return None
                break
            matcher.set_seq1(a[i])
            budget -= 1
            # Cheap upper bounds first: most pairs of different findings stop here.
            if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
                continue
            budget -= 9  # a full ratio costs about ten cheap bounds
            ratio = matcher.ratio()
            if ratio >= threshold and ratio > 0:
                candidates.append((ratio, i, j))
                found = True
        if every and not found:
            return None
    if every and budget <= 0:
        return None
    used_a: set[int] = set()
    used_b: set[int] = set()
    for ratio, i, j in sorted(candidates, key=lambda c: (-c[0], c[1], c[2])):
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            ratios.append(ratio)
    return ratios
