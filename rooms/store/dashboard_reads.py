"""The dashboard's read queries (bot/dashboard): every task across groups and platforms, the
open questions, spend, and what the judgment of the tribunal looked like over time.

Portable SQL only (SQLite and PostgreSQL: no SQLite date functions, no `%` on reals); what SQL
cannot say portably (the day of a timestamp) is grouped here in Python over the few columns read.
Each query is one round trip (`_read`), so a page costs the engine's connection little.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rooms.base.words import ARBITER
from rooms.judge.sendback import SENT_BACK
from rooms.store.connection import StoreBase

DAY_S = 86_400.0
PAGE = 100  # tasks per page of the tasks list


@dataclass(frozen=True)
class TaskFilter:
    """The tasks list's filters; an empty field does not filter. `groups`: the groups the
    viewer may see (None: all)."""

    group: str = ""
    platform: str = ""
    protocol: str = ""
    status: str = ""
    groups: frozenset[str] | None = None
    offset: int = 0
    limit: int = PAGE


@dataclass(frozen=True)
class TaskLine:
    """One line of the tasks list."""

    id: int
    room: str
    platform: str
    channel: str
    thread: str
    group: str
    protocol: str
    status: str
    text: str
    rounds: int
    turns: int
    tokens: int
    cost_usd: float
    created_at: float
    updated_at: float
    running_role: str | None  # the actor of the turn running now, if any
    running_since: float | None


@dataclass(frozen=True)
class OpenQuestion:
    """An open escalation and the task it stops."""

    id: int
    task_id: int
    kind: str
    question: str
    options: tuple[str, ...]
    reason: str
    created_at: float
    group: str
    platform: str
    room: str
    task_text: str


@dataclass(frozen=True)
class Spend:
    """Usage summed one way (by day, group, role or the pair group/role)."""

    key: tuple[str, ...]
    input_tokens: int
    output_tokens: int
    cost_usd: float
    turns: int


@dataclass
class Judgment:
    """What the tribunal's judgment looked like: firings and rulings by day, how people answered
    the arbiter's questions, rulings sent back, swap-check disagreements. The outcome ledger of
    rulings (issue 21) can feed the same shape."""

    firings_by_day: dict[str, Counter[str]] = field(default_factory=dict)  # day → detector → n
    rulings_by_day: dict[str, Counter[str]] = field(default_factory=dict)  # day → verdict → n
    answers: Counter[str] = field(default_factory=Counter)  # upheld / overrode / answered / open
    send_backs: int = 0
    swap_checks: int = 0
    swap_disagreements: list[tuple[int, str]] = field(default_factory=list)  # (task, note)


def day_of(at: float) -> str:
    """The UTC day of a timestamp, as YYYY-MM-DD."""
    import time

    return time.strftime("%Y-%m-%d", time.gmtime(at))


_STATUS_ORDER = "CASE WHEN t.status='waiting_human' THEN 0 WHEN t.status='closed' THEN 2 ELSE 1 END"
_TASK_LINE = (
    "SELECT t.id, t.room, r.platform, r.channel, r.thread, t.group_name, t.protocol, t.status,"
    " t.text, t.rounds, t.turns, t.tokens, t.cost_usd, t.created_at, t.updated_at"
    " FROM tasks t JOIN rooms r ON r.key = t.room"
)
# The actor working now, for the tasks of one page only (after the LIMIT: per row of a sort over
# every task it would run thousands of times). A protocol may run several turns at once (an
# arena's experts): one line names one of them.
_RUNNING = (
    "SELECT task_id, MIN(role), MIN(started_at) FROM turns WHERE status = 'running'"
    " AND task_id IN ({ids}) GROUP BY task_id"
)
TEXT_SHOWN = 300  # characters of a task's text in the list (the task page has all of it)


def _where(f: TaskFilter) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    for column, value in (
        ("t.group_name", f.group),
        ("r.platform", f.platform),
        ("t.protocol", f.protocol),
        ("t.status", f.status),
    ):
        if value:
            clauses.append(f"{column} = ?")
            args.append(value)
    if f.groups is not None:
        if not f.groups:
            clauses.append("1 = 0")
        else:
            clauses.append(f"t.group_name IN ({','.join('?' * len(f.groups))})")
            args.extend(sorted(f.groups))
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _lines(db: sqlite3.Connection, rows: list[Any]) -> list[TaskLine]:
    ids = [int(r[0]) for r in rows]
    running: dict[int, tuple[str, float]] = {}
    if ids:
        found = db.execute(_RUNNING.format(ids=",".join("?" * len(ids))), ids).fetchall()
        running = {int(task): (str(role), float(at)) for task, role, at in found}
    lines = []
    for r in rows:
        role, since = running.get(int(r[0]), (None, None))
        lines.append(
            TaskLine(
                id=int(r[0]),
                room=str(r[1]),
                platform=str(r[2]),
                channel=str(r[3]),
                thread=str(r[4]),
                group=str(r[5]),
                protocol=str(r[6]),
                status=str(r[7]),
                text=str(r[8])[:TEXT_SHOWN],
                rounds=int(r[9]),
                turns=int(r[10]),
                tokens=int(r[11]),
                cost_usd=float(r[12]),
                created_at=float(r[13]),
                updated_at=float(r[14]),
                running_role=role,
                running_since=since,
            )
        )
    return lines


class DashboardReads(StoreBase):
    async def task_lines(self, f: TaskFilter) -> tuple[list[TaskLine], int]:
        """A page of tasks (waiting for people first, then open, then closed; newest first
        within each) and how many match the filter in all."""
        where, args = _where(f)

        def read(db: sqlite3.Connection) -> tuple[list[TaskLine], int]:
            rows = db.execute(
                f"{_TASK_LINE}{where} ORDER BY {_STATUS_ORDER}, t.updated_at DESC, t.id DESC"
                " LIMIT ? OFFSET ?",
                (*args, f.limit, f.offset),
            ).fetchall()
            # Without a platform filter the count needs no join.
            counted = "tasks t JOIN rooms r ON r.key = t.room" if f.platform else "tasks t"
            total = db.execute(f"SELECT COUNT(*) FROM {counted}{where}", args).fetchone()[0]
            return _lines(db, rows), int(total)

        return await self._read(read)

    async def task_line(self, task_id: int) -> TaskLine | None:
        def read(db: sqlite3.Connection) -> list[TaskLine]:
            return _lines(db, db.execute(f"{_TASK_LINE} WHERE t.id = ?", (task_id,)).fetchall())

        found = await self._read(read)
        return found[0] if found else None

    async def facets(self) -> dict[str, list[str]]:
        """The values the tasks list can be filtered by."""

        def read(db: sqlite3.Connection) -> dict[str, list[str]]:
            def values(sql: str) -> list[str]:
                return [str(r[0]) for r in db.execute(sql).fetchall()]

            return {
                "group": values("SELECT name FROM groups ORDER BY name"),
                "platform": values("SELECT DISTINCT platform FROM rooms ORDER BY platform"),
                "protocol": values("SELECT DISTINCT protocol FROM tasks ORDER BY protocol"),
                "status": values("SELECT DISTINCT status FROM tasks ORDER BY status"),
            }

        return await self._read(read)

    async def change_mark(self) -> tuple[Any, ...]:
        """Something that moves whenever a task, turn, message, question or firing does: the
        live pages poll it once for all their viewers and are told to refresh when it moved.
        Only index lookups (a MAX of a primary key or of an indexed column), so its cost does
        not grow with the store."""
        rows = await self._rows(
            "SELECT (SELECT MAX(updated_at) FROM tasks), (SELECT MAX(id) FROM tasks),"
            " (SELECT MAX(id) FROM turns), (SELECT MAX(id) FROM usage),"
            " (SELECT MAX(id) FROM messages), (SELECT MAX(id) FROM escalations),"
            " (SELECT MAX(id) FROM firings)"
        )
        return tuple(rows[0])

    async def open_questions(self, groups: frozenset[str] | None = None) -> list[OpenQuestion]:
        rows = await self._rows(
            "SELECT e.id, e.task_id, e.kind, e.question, e.options, e.reason, e.created_at,"
            " t.group_name, r.platform, t.room, t.text FROM escalations e"
            " JOIN tasks t ON t.id = e.task_id JOIN rooms r ON r.key = t.room"
            " WHERE e.status = 'open' ORDER BY e.created_at, e.id"
        )
        found = [
            OpenQuestion(
                int(r[0]),
                int(r[1]),
                str(r[2]),
                str(r[3]),
                tuple(json.loads(r[4])),
                str(r[5]),
                float(r[6]),
                str(r[7]),
                str(r[8]),
                str(r[9]),
                str(r[10])[:TEXT_SHOWN],
            )
            for r in rows
        ]
        return [q for q in found if groups is None or q.group in groups]

    async def spend(self, since: float, groups: frozenset[str] | None = None) -> list[Spend]:
        """Usage since `since`, by (day, group, role): the costs page sums it any way it shows."""
        rows = await self._rows(
            "SELECT s.at, t.group_name, u.role, s.input_tokens, s.output_tokens, s.cost_usd"
            " FROM usage s JOIN turns u ON u.id = s.turn_id JOIN tasks t ON t.id = s.task_id"
            " WHERE s.at >= ?",
            (since,),
        )
        summed: dict[tuple[str, ...], list[float]] = {}
        for at, group, role, tokens_in, tokens_out, cost in rows:
            if groups is not None and group not in groups:
                continue
            entry = summed.setdefault((day_of(at), str(group), str(role)), [0, 0, 0.0, 0])
            entry[0] += tokens_in
            entry[1] += tokens_out
            entry[2] += cost
            entry[3] += 1
        return [Spend(k, int(v[0]), int(v[1]), float(v[2]), int(v[3])) for k, v in summed.items()]

    async def costly_tasks(self, group: str, at_least_usd: float, limit: int = 20) -> list[Spend]:
        """The group's tasks that cost at least `at_least_usd`, costliest first: key (task id,)."""
        rows = await self._rows(
            "SELECT id, tokens, cost_usd, turns FROM tasks WHERE group_name = ? AND cost_usd >= ?"
            " ORDER BY cost_usd DESC, id LIMIT ?",
            (group, at_least_usd, limit),
        )
        return [Spend((str(r[0]),), int(r[1]), 0, float(r[2]), int(r[3])) for r in rows]

    async def usage_by_role(self, task_id: int) -> list[Spend]:
        """A task's usage by the role of its turns."""
        rows = await self._rows(
            "SELECT u.role, SUM(s.input_tokens), SUM(s.output_tokens), SUM(s.cost_usd), COUNT(*)"
            " FROM usage s JOIN turns u ON u.id = s.turn_id WHERE s.task_id = ?"
            " GROUP BY u.role ORDER BY u.role",
            (task_id,),
        )
        return [Spend((str(r[0]),), int(r[1]), int(r[2]), float(r[3]), int(r[4])) for r in rows]

    async def judgment(self, since: float, groups: frozenset[str] | None = None) -> Judgment:
        """Detector firings and rulings by day, people's answers to the arbiter's questions, rulings
        sent back and swap-check disagreements since `since`."""
        group_ok = "" if groups is None else f" AND t.group_name IN ({','.join('?' * len(groups))})"
        group_args = tuple(sorted(groups or ()))

        def read(db: sqlite3.Connection) -> Judgment:
            seen = Judgment()
            for at, detector in db.execute(
                "SELECT f.at, f.detector FROM firings f JOIN tasks t ON t.id = f.task_id"
                f" WHERE f.at >= ?{group_ok}",
                (since, *group_args),
            ):
                seen.firings_by_day.setdefault(day_of(at), Counter())[str(detector)] += 1
            for at, verdict, task_id, fairness in db.execute(
                "SELECT v.at, v.verdict, v.task_id, v.fairness FROM verdicts v"
                f" JOIN tasks t ON t.id = v.task_id WHERE v.at >= ?{group_ok}",
                (since, *group_args),
            ):
                seen.rulings_by_day.setdefault(day_of(at), Counter())[str(verdict)] += 1
                # rooms/judge/positions.py swap_rule: its note says whether the orders agreed.
                swap = (json.loads(fairness).get("swap") if fairness else None) or ""
                if swap:
                    seen.swap_checks += 1
                if "disagreed" in swap:
                    seen.swap_disagreements.append((int(task_id), str(swap)))
            for status, answer in db.execute(
                "SELECT e.status, e.answer FROM escalations e JOIN tasks t ON t.id = e.task_id"
                f" WHERE e.kind = 'ruling' AND e.created_at >= ?{group_ok}",
                (since, *group_args),
            ):
                seen.answers[_answer_kind(str(status), answer)] += 1
            seen.send_backs = int(
                db.execute(
                    "SELECT COUNT(*) FROM turns u JOIN tasks t ON t.id = u.task_id"
                    f" WHERE u.role = ? AND u.error LIKE ? AND u.started_at >= ?{group_ok}",
                    (ARBITER, SENT_BACK + "%", since, *group_args),
                ).fetchone()[0]
            )
            return seen

        return await self._read(read)


def _answer_kind(status: str, answer: str | None) -> str:
    """How people answered an arbiter's question: approving what it asked upholds the ruling,
    rejecting it overrides it; a written answer or a choice is just an answer."""
    if status == "open":
        return "open"
    if status != "answered":
        return "closed unanswered"
    return {"approve": "upheld", "reject": "overrode"}.get(answer or "", "answered")


@dataclass(frozen=True)
class Counts:
    """The store's side of /metrics, read in one round trip."""

    tasks_by_status: dict[tuple[str, str], int]  # (protocol, status) → tasks
    turns_by_role: dict[tuple[str, str], int]  # (role, status) → turns
    usage_by_group_role: dict[tuple[str, str], tuple[int, int, float]]  # → in, out, cost
    firings_by_detector: dict[str, int]
    failures_by_code: dict[str, int]  # failed turns by their runner error code
    outbox_pending: int
    outbox_oldest_pending_at: float | None
    outbox_dead: int


def read_counts(db: sqlite3.Connection) -> Counts:
    def pairs(sql: str) -> dict[tuple[str, str], int]:
        return {(str(a), str(b)): int(n) for a, b, n in db.execute(sql).fetchall()}

    def singles(sql: str) -> dict[str, int]:
        return {str(a): int(n) for a, n in db.execute(sql).fetchall()}

    usage = {
        (str(g), str(r)): (int(i), int(o), float(c))
        for g, r, i, o, c in db.execute(
            "SELECT t.group_name, u.role, SUM(s.input_tokens), SUM(s.output_tokens),"
            " SUM(s.cost_usd) FROM usage s JOIN turns u ON u.id = s.turn_id"
            " JOIN tasks t ON t.id = s.task_id GROUP BY t.group_name, u.role"
        ).fetchall()
    }
    pending, oldest = db.execute(
        "SELECT COUNT(*), MIN(created_at) FROM outbox WHERE status = 'pending'"
    ).fetchone()
    dead = db.execute("SELECT COUNT(*) FROM outbox WHERE status = 'dead'").fetchone()[0]
    return Counts(
        tasks_by_status=pairs(
            "SELECT protocol, status, COUNT(*) FROM tasks GROUP BY protocol, status"
        ),
        turns_by_role=pairs("SELECT role, status, COUNT(*) FROM turns GROUP BY role, status"),
        usage_by_group_role=usage,
        firings_by_detector=singles("SELECT detector, COUNT(*) FROM firings GROUP BY detector"),
        failures_by_code=singles(
            "SELECT COALESCE(error_code, 'unknown'), COUNT(*) FROM turns"
            " WHERE status = 'failed' GROUP BY COALESCE(error_code, 'unknown')"
        ),
        outbox_pending=int(pending),
        outbox_oldest_pending_at=float(oldest) if oldest is not None else None,
        outbox_dead=int(dead),
    )


class DashboardCounts(StoreBase):
    async def store_counts(self) -> Counts:
        return await self._read(read_counts)

    async def ping(self) -> None:
        """One trivial statement through the connection: raises when the store cannot answer."""
        await self._rows("SELECT 1")
