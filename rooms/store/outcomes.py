"""The outcome ledger's part of the store (DESIGN §5): one row per ruling saying how it turned
out (rooms/judge/outcomes.py judges it from the task's stored history), written again after
every step that can move a ruling's cycle on, so the row is always the judgment of what is
stored (a crash between a step and its ledger write is healed by the next write); and the rows
read back, per group or all, for `status`, `tribunal stats` and the dashboard
(rooms/core/ledger.py aggregates them).

The SQL is plain and portable (an upsert with ON CONFLICT … DO UPDATE): the PostgreSQL store
runs the same statements."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from typing import Any

from rooms.base.words import NO_PROGRESS
from rooms.judge.outcomes import Outcome, judge
from rooms.store import history_rows
from rooms.store.connection import StoreBase
from rooms.store.rows import to_escalation

JUDGED = NO_PROGRESS  # the detector whose firings are the progress judge's calls
_COLUMNS = (
    "verdict_id, task_id, group_name, verdict, result, detail, ruled_at, settled_at, ruling_s,"
    " people_s, answer, sent_back"
)
_UPSERT = (
    f"INSERT INTO outcomes ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT (verdict_id) DO UPDATE SET result = excluded.result,"
    " detail = excluded.detail, settled_at = excluded.settled_at,"
    " ruling_s = excluded.ruling_s, people_s = excluded.people_s, answer = excluded.answer,"
    " sent_back = excluded.sent_back, verdict = excluded.verdict"
)


def settle(db: sqlite3.Connection, task_id: int) -> list[Outcome]:
    """Judge every ruling of the task from what is stored and write the rows; the outcomes."""
    task = db.execute("SELECT group_name, closed_at FROM tasks WHERE id=?", (task_id,)).fetchone()
    if task is None:
        return []
    verdicts = history_rows.verdicts(db, task_id)
    if not verdicts:
        return []
    turns = history_rows.turns(db, task_id)
    firings = history_rows.firings(db, task_id)
    escalations = [
        to_escalation(r)
        for r in db.execute(
            "SELECT * FROM escalations WHERE task_id=? ORDER BY id", (task_id,)
        ).fetchall()
    ]
    found = []
    for i, verdict in enumerate(verdicts):
        following = verdicts[i + 1] if i + 1 < len(verdicts) else None
        o = judge(verdict, following, turns, firings, escalations, closed_at=task["closed_at"])
        found.append(replace(o, group=task["group_name"]))
    db.executemany(
        _UPSERT,
        [
            (
                o.verdict_id,
                o.task_id,
                o.group,
                o.verdict,
                o.result,
                o.detail,
                o.ruled_at,
                o.settled_at,
                o.ruling_s,
                o.people_s,
                o.answer,
                o.sent_back,
            )
            for o in found
        ],
    )
    return found


def _row(r: sqlite3.Row) -> Outcome:
    return Outcome(
        verdict_id=r["verdict_id"],
        task_id=r["task_id"],
        verdict=r["verdict"],
        result=r["result"],
        detail=r["detail"],
        ruled_at=r["ruled_at"],
        settled_at=r["settled_at"],
        ruling_s=r["ruling_s"],
        people_s=r["people_s"],
        answer=r["answer"],
        sent_back=r["sent_back"],
        group=r["group_name"],
    )


class OutcomeStore(StoreBase):
    async def settle_outcomes(self, task_id: int) -> list[Outcome]:
        """Write the ledger rows of the task's rulings as they stand now (one transaction)."""
        return await self._transact(lambda db: settle(db, task_id))

    async def outcomes(
        self, *, group: str | None = None, task_id: int | None = None, since: float = 0.0
    ) -> list[Outcome]:
        """The ledger's rows, oldest ruling first: all, one group's, or one task's, from
        `since` (a ruling's time) on."""
        where = ["ruled_at >= ?"]
        args: list[Any] = [since]
        if group is not None:
            where.append("group_name = ?")
            args.append(group)
        if task_id is not None:
            where.append("task_id = ?")
            args.append(task_id)
        rows = await self._rows(
            f"SELECT * FROM outcomes WHERE {' AND '.join(where)} ORDER BY ruled_at, verdict_id",
            tuple(args),
        )
        return [_row(r) for r in rows]

    async def judge_costs(
        self, *, group: str | None = None, since: float = 0.0
    ) -> dict[str, tuple[int, float]]:
        """The progress judge's calls and their cost per group (rooms/judge/no_progress.py
        stores each judgment as a firing of `no_progress`, its cost in the firing's extra).
        Summed here rather than in SQL: reading JSON differs between SQLite and PostgreSQL."""
        sql = (
            "SELECT t.group_name, f.extra FROM firings f JOIN tasks t ON t.id = f.task_id"
            " WHERE f.detector = ? AND f.at >= ?"
        )
        args: list[Any] = [JUDGED, since]
        if group is not None:
            sql += " AND t.group_name = ?"
            args.append(group)
        found: dict[str, tuple[int, float]] = {}
        for r in await self._rows(sql, tuple(args)):
            calls, cost = found.get(r[0], (0, 0.0))
            extra = json.loads(r[1] or "{}")
            found[r[0]] = (calls + 1, cost + float(extra.get("cost_usd", 0.0) or 0.0))
        return found
