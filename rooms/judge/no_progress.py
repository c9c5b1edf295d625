"""`no_progress`: stalls judged by meaning (DESIGN §4). Real models reword, so a stall can slip
past the content detectors (new words, cosmetic tree changes, no finding ids) until the round
cap. When they see nothing and the pair has gone `no_progress_rounds` rounds without approval
since the last human message or ruling, a cheap judge (the group's first reference model, one
short call from the host) is asked: "is round N making progress on the open findings of round
N−1?", answering a small JSON object: {"progress": "yes"|"no", "finding_ids": [...]}.

Each judgment is stored like any detector firing (its reason, the answer, its cost; not acted on
unless it fires), and the detector fires on two consecutive "no" answers: at the earliest at the
review that closes round `no_progress_rounds + 1`. When in doubt, do not interrupt: an answer
that cannot be read, a failure or a timeout counts as "yes". Off for a group without a reference
model. `tribunal replay --judge FILE` feeds recorded answers through the same rule, offline.

This module is pure (the prompt, reading an answer, the rule); rooms/pair/progress_judge.py asks
the model.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rooms.base.model import Firing
from rooms.base.words import APPROVED, NO_PROGRESS, REVIEWER
from rooms.judge.detector_spec import DetectorSpec, Threshold
from rooms.judge.findings import findings

PART_CHARS = 2500  # of each text the judge reads: one short call
JUDGE_TIMEOUT_S = 30.0  # at most, whatever the reference's own timeout

SPEC = DetectorSpec(
    NO_PROGRESS,
    "a cheap judge says twice in a row that a round made no progress on the open findings",
    thresholds=(
        Threshold(
            "no_progress_rounds",
            "rounds without approval (and nothing else firing) before the progress judge is "
            "asked after each review; two consecutive “no” fire",
            ge=1,
        ),
    ),
)


class StepLike(Protocol):
    """What the rule reads of a history step (rooms.judge.detectors.Step)."""

    @property
    def kind(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def marker(self) -> str | None: ...
    @property
    def tree(self) -> str | None: ...


@dataclass(frozen=True)
class Judgment:
    progress: bool  # False: the judge said "no"
    finding_ids: tuple[str, ...] = ()
    readable: bool = True
    note: str = ""  # why it counts as "yes" when it was not read

    @property
    def answer(self) -> str:
        return "yes" if self.progress else "no"


def unapproved_rounds(window: Sequence[StepLike]) -> int:
    """Reviews since the last approval in `window` (the steps since the last human message or
    ruling): the rounds the pair has gone without approval."""
    count = 0
    for step in reversed(window):
        if step.kind == "turn" and step.role == REVIEWER:
            if step.marker == APPROVED:
                break
            count += 1
    return count


def due(window: Sequence[StepLike], rounds_needed: int) -> bool:
    """Whether the judge is asked after the window's latest step: a review that does not approve,
    closing at least `rounds_needed` rounds without approval."""
    if not window or window[-1].kind != "turn" or window[-1].role != REVIEWER:
        return False
    if window[-1].marker == APPROVED:
        return False
    return unapproved_rounds(window) >= rounds_needed


def prompt(task: str, window: Sequence[StepLike]) -> str:
    """The judge's question about the latest round against the review before it."""
    reviews = [i for i, s in enumerate(window) if s.kind == "turn" and s.role == REVIEWER]
    latest, before = reviews[-1], reviews[-2] if len(reviews) > 1 else -1
    earlier_review = window[before] if before >= 0 else None
    owner = [s for s in window[before + 1 : latest] if s.role != REVIEWER and s.kind == "turn"]
    trees = [s.tree for s in owner if s.tree]
    before_tree = earlier_review.tree if earlier_review is not None else None
    changed = (
        "unknown"
        if not trees or before_tree is None
        else ("unchanged" if trees[-1] == before_tree else "changed")
    )
    n = unapproved_rounds(window)
    open_before = findings(earlier_review.text) if earlier_review is not None else []
    parts = [
        "You judge whether a coding pair is making progress. Answer with one JSON object and "
        'nothing else: {"progress": "yes" or "no", "finding_ids": [the ids or short names of '
        "the findings still open without progress]}.",
        f"Task: {_cut(task)}",
        f"Open findings of round {n - 1}:",
        _cut("\n".join(open_before) or (earlier_review.text if earlier_review else "(none)")),
        f"Round {n}, the implementer said:",
        _cut("\n\n".join(s.text for s in owner) or "(nothing)"),
        f"The workspace was {changed} in round {n}.",
        f"Round {n}, the verifier said:",
        _cut(window[latest].text),
        f"Is round {n} making progress on the open findings of round {n - 1}? Rewording the same "
        "objection or the same defence is not progress; a fixed finding, a new test, a "
        "narrowed disagreement is.",
    ]
    return "\n\n".join(parts)


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= PART_CHARS else text[:PART_CHARS] + " […]"


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def read(text: str) -> Judgment:
    """The judge's answer; anything but a clear object saying yes or no is "yes" (unread)."""
    # Full-width braces and quotes (｛＂progress＂：…｝) read as their ASCII forms.
    found = _OBJECT.search(unicodedata.normalize("NFKC", text or ""))
    if found is None:
        return Judgment(True, readable=False, note="no JSON object in the answer")
    try:
        data: Any = json.loads(found.group(0))
    except ValueError:
        return Judgment(True, readable=False, note="the answer's JSON does not parse")
    if not isinstance(data, dict):
        return Judgment(True, readable=False, note="the answer is not an object")
    said = data.get("progress")
    if isinstance(said, str):
        said = {"yes": True, "no": False}.get(said.strip().lower())
    if not isinstance(said, bool):
        return Judgment(True, readable=False, note="the answer says neither yes nor no")
    ids = data.get("finding_ids", [])
    kept = tuple(str(i)[:40] for i in ids[:20]) if isinstance(ids, list) else ()
    return Judgment(said, kept)


def failed(note: str) -> Judgment:
    """A judge that failed or timed out: "yes" (do not interrupt)."""
    return Judgment(True, readable=False, note=note)


def fires(judgment: Judgment, previous: Judgment | None) -> bool:
    """Two consecutive "no": this round's and the round before's."""
    return not judgment.progress and previous is not None and not previous.progress


def firing(
    judgment: Judgment,
    previous: Judgment | None,
    *,
    round_no: int,
    cost_usd: float = 0.0,
    tokens: int = 0,
    judge: str = "",
    raw: str = "",
) -> Firing:
    """The judgment as it is stored (like any detector firing): acted on only when it fires."""
    fired = fires(judgment, previous)
    if fired:
        ids = ", ".join(judgment.finding_ids) or "the open findings"
        reason = (
            f"the progress judge answered “no” for rounds {round_no - 1} and {round_no}: no "
            f"progress on {ids}"
        )
    elif judgment.readable:
        reason = f"the progress judge answered “{judgment.answer}” for round {round_no}"
    else:
        reason = (
            f"the progress judge's answer for round {round_no} counts as “yes”: {judgment.note}"
        )
    return Firing(
        detector=NO_PROGRESS,
        reason=reason,
        extra={
            "answer": judgment.answer,
            "readable": judgment.readable,
            "finding_ids": list(judgment.finding_ids),
            "round": round_no,
            "fires": fired,
            "cost_usd": cost_usd,
            "tokens": tokens,
            "judge": judge,
            "raw": raw[:500],
        },
    )


def stored(extra: dict[str, Any]) -> Judgment:
    """A judgment as a firing's extra keeps it."""
    return Judgment(
        progress=extra.get("answer") != "no",
        finding_ids=tuple(extra.get("finding_ids") or ()),
        readable=bool(extra.get("readable", True)),
    )
