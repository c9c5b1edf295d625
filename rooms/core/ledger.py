"""The outcome ledger summed up (DESIGN §5): per group and overall, how many rulings were
borne out, how often people overrode the arbiter, how long decisions took, and what the
progress judge (rooms/judge/no_progress.py) cost. One plain function, `ledger_summary`, that
`status`, `tribunal stats` and the dashboard call alike (`to_json` is its export).

Definitions (rooms/judge/outcomes.py says how one ruling is judged):
- settled: a ruling whose cycle ended (not pending); an ESCALATE whose question closed
  unanswered is settled but neither borne out nor overridden;
- borne out: PROCEED/REVISE/RESET borne out, plus ESCALATE upheld (people chose one of its
  options); the share is of the settled rulings;
- override rate: ESCALATE rulings people answered their own way or rejected, of the settled
  rulings;
- time to decision: the arbiter's (from the detector's firing to the ruling) and the people's
  (from an escalated ruling's question to its answer), as means over the rulings that have one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from rooms.judge.outcomes import (
    BORNE_OUT,
    COMPLETE,
    NOT_BORNE_OUT,
    OVERRIDDEN,
    PENDING,
    UNANSWERED,
    UPHELD,
    Outcome,
)
from rooms.store import Store

OVERALL = "(all groups)"


@dataclass(frozen=True)
class Tally:
    """One group's (or every group's, `group == OVERALL`) rulings, summed up."""

    group: str
    rulings: int
    settled: int
    borne_out: int  # PROCEED/REVISE/RESET borne out + ESCALATE upheld
    not_borne_out: int
    upheld: int
    overridden: int
    unanswered: int
    pending: int
    share_borne_out: float | None  # of the settled rulings; None with none settled
    override_rate: float | None
    mean_ruling_s: float | None
    mean_people_s: float | None
    sent_back: int  # rulings whose arbitration sent an answer back once
    sent_back_complete: int  # … whose second answer was complete
    judge_calls: int = 0  # progress judgments (no_progress) and their cost
    judge_cost_usd: float = 0.0


@dataclass(frozen=True)
class Ledger:
    overall: Tally
    groups: list[Tally]

    def to_json(self) -> dict[str, Any]:
        return {"overall": asdict(self.overall), "groups": [asdict(g) for g in self.groups]}


def tally(group: str, rows: Iterable[Outcome], judge: tuple[int, float] = (0, 0.0)) -> Tally:
    rows = list(rows)
    count = {r: sum(1 for o in rows if o.result == r) for r in _RESULTS}
    settled = len(rows) - count[PENDING]
    borne = count[BORNE_OUT] + count[UPHELD]
    ruling_s = [o.ruling_s for o in rows if o.ruling_s is not None]
    people_s = [o.people_s for o in rows if o.people_s is not None]
    sent = [o for o in rows if o.sent_back is not None]
    return Tally(
        group=group,
        rulings=len(rows),
        settled=settled,
        borne_out=borne,
        not_borne_out=count[NOT_BORNE_OUT],
        upheld=count[UPHELD],
        overridden=count[OVERRIDDEN],
        unanswered=count[UNANSWERED],
        pending=count[PENDING],
        share_borne_out=borne / settled if settled else None,
        override_rate=count[OVERRIDDEN] / settled if settled else None,
        mean_ruling_s=sum(ruling_s) / len(ruling_s) if ruling_s else None,
        mean_people_s=sum(people_s) / len(people_s) if people_s else None,
        sent_back=len(sent),
        sent_back_complete=sum(1 for o in sent if o.sent_back == COMPLETE),
        judge_calls=judge[0],
        judge_cost_usd=judge[1],
    )


_RESULTS = (PENDING, BORNE_OUT, NOT_BORNE_OUT, UPHELD, OVERRIDDEN, UNANSWERED)


async def ledger_summary(
    store: Store,
    *,
    group: str | None = None,
    since: float = 0.0,
    among: frozenset[str] | None = None,
) -> Ledger:
    """The ledger per group and overall (one group's only, with `group`), from `since` on.
    `among` keeps only those groups (the dashboard shows a person the groups they may see; the
    overall row is then theirs too)."""
    rows = await store.outcomes(group=group, since=since)
    judged = await store.judge_costs(group=group, since=since)
    if among is not None:
        rows = [o for o in rows if o.group in among]
        judged = {name: cost for name, cost in judged.items() if name in among}
    names = sorted({o.group for o in rows} | set(judged))
    groups = [
        tally(name, (o for o in rows if o.group == name), judged.get(name, (0, 0.0)))
        for name in names
    ]
    calls = sum(c for c, _ in judged.values())
    cost = sum(c for _, c in judged.values())
    return Ledger(tally(OVERALL, rows, (calls, cost)), groups)


def percent(share: float | None) -> str:
    return "–" if share is None else f"{share:.0%}"


def seconds(value: float | None) -> str:
    if value is None:
        return "–"
    if value < 90:
        return f"{value:.0f} s"
    if value < 5400:
        return f"{value / 60:.0f} min"
    return f"{value / 3600:.1f} h"


def summary_line(t: Tally) -> str:
    """One line for `status`: the group's rulings and how they turned out."""
    if not t.rulings:
        return "Rulings in this group: none yet."
    return (
        f"Rulings in this group: {t.rulings} ({t.pending} pending) · borne out "
        f"{percent(t.share_borne_out)} · overridden {percent(t.override_rate)} · arbiter "
        f"{seconds(t.mean_ruling_s)}, people {seconds(t.mean_people_s)} on average"
    )


RESULT_WORDS = {
    PENDING: "pending",
    BORNE_OUT: "borne out",
    NOT_BORNE_OUT: "not borne out",
    UPHELD: "upheld",
    OVERRIDDEN: "overridden",
    UNANSWERED: "unanswered",
}


def outcome_line(o: Outcome) -> str:
    """One ruling's ledger entry, in words (status, the decision record)."""
    line = f"{o.verdict}: {RESULT_WORDS.get(o.result, o.result)} ({o.detail})"
    if o.people_s is not None:
        line += f"; the people took {seconds(o.people_s)}"
    if o.sent_back is not None:
        line += f"; sent back once, the second answer {o.sent_back}"
    return line
