"""The `repeated_findings` detector (DESIGN §4): the reviewer asks for the same things round
after round. It is the one detector that reads what the reviewer asked for, and it has three
ways to tell that the findings are the same, from the most to the least certain:

- structured reviews: the engine's finding ids (rooms/judge/finding_ledger.py), the same open
  ids with none resolved, however they were worded;
- findings the reviewer numbers in its text (F1, F2, …): the same ids;
- otherwise the findings' text, each open finding matched one to one to an earlier one at the
  group's `findings_similarity` (rooms/judge/findings.py), so any finding closed or new is
  progress.
"""

from __future__ import annotations

from collections.abc import Sequence

from rooms.base.model import Firing, Thresholds
from rooms.base.words import REPEATED_FINDINGS, REVIEWER
from rooms.judge.findings import similar
from rooms.judge.noise import digest, normalize
from rooms.judge.quoting import in_reason
from rooms.judge.steps import Round, Step


def repeated_findings(window: Sequence[Step], rounds: list[Round], t: Thresholds) -> Firing | None:
    span = max(1, t.repeated_findings_rounds)
    if window[-1].role != REVIEWER or len(rounds) < span + 1:
        return None
    recent = rounds[-(span + 1) :]
    opened = [r.reviewer.open_ids for r in recent]
    # Structured reviews that name findings are compared by id; ones whose objects name none
    # (the reviewer wrote its findings in the prose only) are read as text, like any other.
    if all(o is not None for o in opened) and any(opened):
        return _repeated_open_ids(recent, span)
    latest = recent[-1].findings
    if not latest or any(not r.findings for r in recent):
        return None  # an approval, or a review with nothing we can read as findings
    ids = [r.finding_ids for r in recent]
    latest_ids = ids[-1]
    extra: dict[str, object] = {"findings": len(latest)}
    if latest_ids is not None and all(i is not None for i in ids):
        # The reviewer numbers its findings: the same ids are the same defects, however worded.
        if any(i != latest_ids for i in ids):
            return None
        named = ", ".join(sorted(latest_ids, key=_id_order))
        what = f"the reviewer's open findings ({named}) have not changed for {span} rounds"
        print_ = digest("finding-ids", *sorted(latest_ids))
        extra["ids"] = sorted(latest_ids, key=_id_order)
    elif all(similar(r.findings, latest, t.findings_similarity) for r in recent[:-1]):
        what = (
            f"the reviewer's findings have not changed for {span} rounds "
            f"(first of them: {in_reason(latest[0])})"
        )
        print_ = digest("findings", *sorted(normalize(item) for item in latest))
    else:
        return None
    return Firing(detector=REPEATED_FINDINGS, reason=what, fingerprint=print_, extra=extra)


def _repeated_open_ids(recent: Sequence[Round], span: int) -> Firing | None:
    """Structured reviews: the same open ids, none resolved, for `span` rounds, whatever words
    the reviewer used; any finding closed or new is progress."""
    opened = [r.reviewer.open_ids for r in recent]
    latest = opened[-1]
    if not latest or any(r.approved for r in recent) or any(o != latest for o in opened):
        return None
    ids = sorted(latest, key=_id_order)
    return Firing(
        detector=REPEATED_FINDINGS,
        reason=f"the reviewer's open findings ({', '.join(ids)}) stayed open, none resolved, "
        f"for {span} rounds",
        fingerprint=digest("finding-ids", *sorted(latest)),
        extra={"findings": len(ids), "ids": ids, "structured": True},
    )


def _id_order(finding: str) -> int:
    return int(finding[1:])
