"""The reviewer's findings by the engine's ids, across a task's structured reviews (DESIGN §3
"Structured turns"; §4 repeated findings).

The engine owns finding ids: the reviewer's prompt lists the open findings with their ids, its
object gives each one's status by that id, and any finding whose id the engine has not issued
(a new one, sent with an empty id, or an id the model made up) gets the engine's next number
before the review is stored. The ledger is then read back from the stored objects in order:
each review updates the findings it names; one it does not name keeps its last status (it was
not resolved). The detectors compare the open ids, not the words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from rooms.base.model import Turn
from rooms.base.words import OWNER, REVIEWER
from rooms.judge.quoting import quoted
from rooms.judge.turn_objects import OBJECT, OPEN, Finding, OwnerTurn, ReviewerTurn

_ENGINE_ID = re.compile(r"F(?P<n>[1-9]\d{0,5})")
_LISTED = 50  # open findings listed in a prompt or a post; more are counted, not listed
_LISTED_CHARS = 300
_TEXT_CHARS = 2000  # one dispute's evidence, as the reviewer is shown it


@dataclass(frozen=True)
class Ledger:
    findings: dict[str, Finding] = field(default_factory=dict)  # id → its latest state
    issued: int = 0  # the highest number issued (F1 … F<issued>)

    def open(self) -> list[Finding]:
        return [f for f in self.findings.values() if f.status == OPEN]

    def open_ids(self) -> frozenset[str]:
        return frozenset(f.id for f in self.open())

    def numbered(self, review: ReviewerTurn) -> ReviewerTurn:
        """`review` with every finding under an engine id: an issued id the review has not
        used yet is kept; any other id gets the next number."""
        issued, used, findings = self.issued, set[str](), []
        for f in review.findings:
            wanted = f.id.strip().upper()
            if wanted in self.findings and wanted not in used:
                new_id = wanted
            else:
                issued += 1
                new_id = f"F{issued}"
            used.add(new_id)
            findings.append(f.model_copy(update={"id": new_id}))
        return review.model_copy(update={"findings": findings})

    def after(self, review: ReviewerTurn) -> Ledger:
        """This ledger after a numbered review."""
        findings = dict(self.findings)
        issued = self.issued
        for f in review.findings:
            findings[f.id] = f
            m = _ENGINE_ID.fullmatch(f.id)
            issued = max(issued, int(m.group("n")) if m else 0)
        return Ledger(findings, issued)


def stored_review(turn: Turn) -> ReviewerTurn | None:
    """A reviewer turn's stored object, when its marker was read from one."""
    if turn.role != REVIEWER or turn.marker_source != OBJECT or turn.structured is None:
        return None
    try:
        return ReviewerTurn.model_validate(turn.structured)
    except ValidationError:  # stored by an older version, or edited: not a structured turn
        return None


def ledger_of(turns: Iterable[Turn]) -> Ledger:
    """The ledger after the finished structured reviews among `turns` (in seq order)."""
    ledger = Ledger()
    for turn in turns:
        review = stored_review(turn) if turn.status == "done" else None
        if review is not None:
            ledger = ledger.after(review)
    return ledger


def open_findings_section(ledger: Ledger) -> list[str]:
    """The open findings for a prompt: the reviewer gives each one's status by its id, the
    owner names the ids it addressed or disputes. Their words are the reviewer's: quoted."""
    if not ledger.findings:
        return []
    open_ = ledger.open()
    lines = ["## Open findings (ids are the engine's)"]
    if not open_:
        lines.append("None: every finding so far is resolved or withdrawn.")
        return lines
    lines.append(
        "Give each one's status by its id in `findings` before any new finding (a new "
        "finding's id is empty: the engine numbers it). The owner names the ids it "
        "addressed or disputes."
    )
    lines += [quoted(_line(f)) for f in open_[:_LISTED]]
    if len(open_) > _LISTED:
        lines.append(f"… and {len(open_) - _LISTED} more open findings.")
    return lines


def owner_answer_section(turns: Sequence[Turn]) -> list[str]:
    """For the reviewer: the finding ids the owner's structured turns since the last review
    addressed, and the ones it disputes with its evidence (the owner's words: quoted)."""
    addressed: list[str] = []
    disputed: list[str] = []
    for turn in reversed(turns):
        if turn.role == REVIEWER:
            break
        work = _stored_work(turn)
        if work is None:
            continue
        addressed = [i for i in work.addressed if i not in addressed] + addressed
        disputed = [
            quoted(f"**{d.id}**: {' '.join(d.evidence.split())[:_TEXT_CHARS]}")
            for d in work.disputed
        ] + disputed
    if not addressed and not disputed:
        return []
    lines = ["## The owner's answer to the findings"]
    if addressed:
        lines.append("Addressed: " + ", ".join(a.strip() for a in addressed[:_LISTED]))
    if disputed:
        lines.append("Disputed, with the owner's evidence:")
        lines += disputed[:_LISTED]
    return lines


def _stored_work(turn: Turn) -> OwnerTurn | None:
    if turn.role != OWNER or turn.status != "done" or turn.marker_source != OBJECT:
        return None
    try:
        return OwnerTurn.model_validate(turn.structured)
    except ValidationError:
        return None


def findings_summary(before: Ledger, after: Ledger) -> str:
    """The compact findings list posted under a structured review: what is open, and what was
    resolved or withdrawn since the previous review."""
    open_ = after.open()
    was_open = {f.id for f in before.open()}
    closed = [
        f
        for f in after.findings.values()
        if f.status != OPEN and (f.id in was_open or f.id not in before.findings)
    ]
    parts: list[str] = []
    if open_:
        parts.append(f"**Open findings ({len(open_)})**")
        parts += [f"- {_line(f)}" for f in open_[:_LISTED]]
        if len(open_) > _LISTED:
            parts.append(f"- … and {len(open_) - _LISTED} more")
    if closed:
        named = ", ".join(f"{f.id} ({f.status})" for f in closed[:_LISTED])
        parts.append(f"**Since the last review:** {named}")
    return "\n".join(parts)


def _line(f: Finding) -> str:
    where = f" `{f.where.strip()}`" if f.where.strip() else ""
    text = " ".join(f.text.split())
    if len(text) > _LISTED_CHARS:
        text = text[:_LISTED_CHARS] + "…"
    return f"**{f.id}**{where}: {text}"
