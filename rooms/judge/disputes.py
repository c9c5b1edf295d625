"""Findings checked before they count (DESIGN §5): a reviewer's finding that the owner has
disputed with evidence (a test's output, a quoted line, a command, a file:line) in two or more
of its turns is not just repeated to the arbiter. Its prompt shows each such finding side by
side with the owner's evidence, round by round, and says that a dispute about what the code does
is settled by tests (the arbiter may ask for a resolve) rather than by who argues better.

Only the arbiter's prompt changes: the detectors read the same prose as before (a structured
owner turn's disputes are in its stored object, not in the text they compare), so no detection
turn moves (tests/rooms/test_disputes.py measures it on the fixtures).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from rooms.base.model import Turn
from rooms.base.words import OWNER, REVIEWER
from rooms.judge.finding_ledger import ledger_of
from rooms.judge.positions import mask_roles
from rooms.judge.turn_objects import OBJECT, OwnerTurn

TWICE = 2  # disputes with evidence, in as many owner turns, before the side-by-side view
_CELL_CHARS = 600
_SHOWN = 5  # disputed findings shown; more are counted
# What makes a dispute carry evidence rather than an opinion: code or a quoted line, a command or
# its output, a test's result, a place in the code.
_EVIDENCE = re.compile(
    r"`"  # code, a command, a quoted identifier
    r"|^\s*>"  # a quoted line
    r"|^\s*\$ "  # a shell prompt
    r"|\b[\w./-]+\.\w+:\d+"  # file:line
    r"|\b(?:\d+\s+)?(?:passed|failed)\b|\b(?:PASS|FAIL|OK)\b"  # a test run's result
    r"|\bexit(?:ed)?(?:\s+(?:code|status))?\s+\d"
    r"|\bassert|Traceback|\w*Error\b",
    re.MULTILINE,
)


def has_evidence(text: str) -> bool:
    """Whether a dispute shows something (full-width backticks and quotes read as ASCII)."""
    return _EVIDENCE.search(unicodedata.normalize("NFKC", text)) is not None


@dataclass(frozen=True)
class DisputedFinding:
    id: str
    finding: str  # the reviewer's latest words for it
    where: str
    rounds: tuple[tuple[int, str], ...]  # (the owner turn's seq, its evidence), oldest first


def disputed_twice(turns: Sequence[Turn]) -> list[DisputedFinding]:
    """The findings still open that the owner disputed with evidence in at least two of its
    structured turns, in the order of their ids."""
    done = [t for t in turns if t.status == "done" and t.role in (OWNER, REVIEWER)]
    ledger = ledger_of(done)
    open_ = {f.id: f for f in ledger.open()}
    evidence: dict[str, list[tuple[int, str]]] = {}
    for turn in done:
        work = _owner_object(turn)
        if work is None:
            continue
        for d in work.disputed:
            key = d.id.strip().upper()
            if key in open_ and has_evidence(d.evidence):
                evidence.setdefault(key, []).append((turn.seq, d.evidence))
    return [
        DisputedFinding(key, open_[key].text, open_[key].where, tuple(found))
        for key, found in evidence.items()
        if len({seq for seq, _ in found}) >= TWICE
    ]


def section(turns: Sequence[Turn], letter: Mapping[str, str]) -> str:
    """The arbiter's "## Disputed findings" section ("" when there is none), with the sides
    under their position letters (rooms/judge/positions)."""
    found = disputed_twice(turns)
    if not found:
        return ""
    finder, disputer = f"Position {letter[REVIEWER]}", f"Position {letter[OWNER]}"
    lines = [
        "## Disputed findings",
        f"{disputer} disputed these findings of {finder} with evidence, at least twice. Read "
        "the finding and the evidence side by side before counting the finding as still open. "
        "Where the dispute is about what the code does, ask for tests (`resolve`) instead of "
        "ruling on the arguments.",
    ]
    for d in found[:_SHOWN]:
        where = f" ({_cell(d.where, letter)})" if d.where.strip() else ""
        lines += [
            "",
            f"### {d.id}{where}",
            f"| {finder}: the finding | {disputer}: the evidence |",
            "| --- | --- |",
        ]
        lines += [
            f"| {_cell(d.finding, letter) if i == 0 else '〃'} | turn {seq}: "
            f"{_cell(text, letter)} |"
            for i, (seq, text) in enumerate(d.rounds)
        ]
    if len(found) > _SHOWN:
        lines.append(f"\n… and {len(found) - _SHOWN} more disputed findings.")
    return "\n".join(lines)


def _cell(text: str, letter: Mapping[str, str]) -> str:
    """One table cell of a side's words: the roles masked, one line, its pipes escaped,
    bounded (a cell cannot start a line of the prompt of its own)."""
    one = " ".join(mask_roles(text, letter).split()).replace("|", "\\|")
    return one if len(one) <= _CELL_CHARS else one[:_CELL_CHARS] + "…"


def _owner_object(turn: Turn) -> OwnerTurn | None:
    if turn.role != OWNER or turn.marker_source != OBJECT or turn.structured is None:
        return None
    try:
        return OwnerTurn.model_validate(turn.structured)
    except ValidationError:
        return None
