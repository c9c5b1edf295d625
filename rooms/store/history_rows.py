"""Reading a task's history from the store: turns, human messages, rulings, detector firings
and the time spent waiting for people (plain functions of the sqlite3 connection, run on
aiosqlite's worker thread; `history` reads all of it in one round trip)."""

from __future__ import annotations

import json
import sqlite3

from rooms.base.model import Firing, Ruling, Turn
from rooms.base.records import FiringRow, Message, VerdictRow
from rooms.judge.history import History
from rooms.store.rows import to_turn


def history(db: sqlite3.Connection, task_id: int) -> History:
    return History(
        turns=turns(db, task_id),
        messages=messages(db, task_id),
        verdicts=verdicts(db, task_id),
        firings=firings(db, task_id),
        waited_s=waited_s(db, task_id),
    )


def turns(db: sqlite3.Connection, task_id: int) -> list[Turn]:
    rows = db.execute("SELECT * FROM turns WHERE task_id=? ORDER BY seq", (task_id,)).fetchall()
    return [to_turn(r) for r in rows]


def messages(db: sqlite3.Connection, task_id: int, since: int = 0) -> list[Message]:
    """The task's messages with an id above `since` (all of them by default), in order."""
    rows = db.execute(
        "SELECT * FROM messages WHERE task_id=? AND id > ? ORDER BY id", (task_id, since)
    ).fetchall()
    return [
        Message(
            id=r["id"],
            task_id=r["task_id"],
            user=r["user"],
            text=r["text"],
            kind=r["kind"],
            before_seq=r["before_seq"],
            at=r["at"],
        )
        for r in rows
    ]


def firings(db: sqlite3.Connection, task_id: int) -> list[FiringRow]:
    rows = db.execute("SELECT * FROM firings WHERE task_id=? ORDER BY id", (task_id,)).fetchall()
    return [
        FiringRow(
            id=r["id"],
            task_id=r["task_id"],
            turn_id=r["turn_id"],
            firing=Firing(
                detector=r["detector"],
                reason=r["reason"],
                fingerprint=r["fingerprint"],
                extra=json.loads(r["extra"]),
            ),
            acted=bool(r["acted"]),
            at=r["at"],
        )
        for r in rows
    ]


def verdicts(db: sqlite3.Connection, task_id: int) -> list[VerdictRow]:
    rows = db.execute(
        "SELECT v.*, t.seq FROM verdicts v JOIN turns t ON t.id = v.turn_id"
        " WHERE v.task_id=? ORDER BY v.id",
        (task_id,),
    ).fetchall()
    return [
        VerdictRow(
            id=r["id"],
            task_id=r["task_id"],
            turn_id=r["turn_id"],
            turn_seq=r["seq"],
            firing_id=r["firing_id"],
            ruling=Ruling.model_validate_json(r["ruling"]),
            record_path=r["record_path"],
            at=r["at"],
            panel_id=r["panel_id"],
            tally=json.loads(r["tally"]) if r["tally"] else None,
            fairness=json.loads(r["fairness"]) if r["fairness"] else None,
        )
        for r in rows
    ]


def waited_s(db: sqlite3.Connection, task_id: int) -> float:
    row = db.execute(
        "SELECT COALESCE(SUM(answered_at - created_at), 0) FROM escalations"
        " WHERE task_id=? AND answered_at IS NOT NULL",
        (task_id,),
    ).fetchone()
    return float(row[0])
