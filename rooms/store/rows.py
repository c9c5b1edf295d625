"""Row conversion and the small statements the store runs inside its transactions (plain
functions of the sqlite3 connection: they run on aiosqlite's worker thread, see connection.py)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from rooms.base.model import Action, Card, RoomRef, Summon, Task, Turn
from rooms.base.records import Escalation, OutboxDraft, OutboxRow


class Abort(Exception):
    """Raised inside a transaction to roll it back and report a lost race to the caller."""


def record_event(db: sqlite3.Connection, event_id: str, now: float) -> bool:
    """True when the inbound event id is new (and now recorded)."""
    cursor = db.execute(
        "INSERT INTO events (event_id, at) VALUES (?, ?) ON CONFLICT(event_id) DO NOTHING",
        (event_id, now),
    )
    return cursor.rowcount == 1


def ensure_room(db: sqlite3.Connection, room: RoomRef, group: str, now: float) -> None:
    db.execute(
        "INSERT INTO groups (name, created_at) VALUES (?, ?) ON CONFLICT(name) DO NOTHING",
        (group, now),
    )
    db.execute(
        "INSERT INTO rooms (key, platform, channel, thread, group_name, created_at)"
        " VALUES (?,?,?,?,?,?) ON CONFLICT(key) DO NOTHING",
        (room.key, room.platform, room.channel, room.thread, group, now),
    )


_ENQUEUE = (
    "INSERT INTO outbox (key, task_id, room, text, persona, actions, card, private_to,"
    " in_reply_to, created_at) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(key) DO NOTHING"
)


def _outbox_values(draft: OutboxDraft, task_id: int | None, now: float) -> tuple[Any, ...]:
    actions = json.dumps(
        [
            {"action": a.action, "label": a.label, "value": a.value, "style": a.style}
            for a in draft.actions
        ]
    )
    card = json.dumps(draft.card.to_json()) if draft.card is not None else None
    return (
        draft.key,
        task_id,
        draft.room.key,
        draft.text,
        draft.persona,
        actions,
        card,
        draft.private_to,
        draft.in_reply_to,
        now,
    )


def enqueue(db: sqlite3.Connection, draft: OutboxDraft, task_id: int | None, now: float) -> None:
    """Add one outbox row; a key seen before is ignored (enqueueing is idempotent)."""
    db.execute(_ENQUEUE, _outbox_values(draft, task_id, now))


def enqueue_all(
    db: sqlite3.Connection, drafts: list[OutboxDraft], task_id: int | None, now: float
) -> None:
    """`enqueue` for several rows, in their order, in one round trip."""
    if drafts:
        db.executemany(_ENQUEUE, [_outbox_values(d, task_id, now) for d in drafts])


def one(db: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> Any:
    rows = db.execute(sql, args).fetchall()
    return rows[0] if rows else None


def load_task(db: sqlite3.Connection, task_id: int) -> Task:
    row = one(db, "SELECT * FROM tasks WHERE id=?", (task_id,))
    if row is None:
        raise Abort
    return to_task(row)


def to_task(r: sqlite3.Row) -> Task:
    return Task(
        id=r["id"],
        room=r["room"],
        group=r["group_name"],
        text=r["text"],
        status=r["status"],
        version=r["version"],
        rounds=r["rounds"],
        arbitrations=r["arbitrations"],
        turns=r["turns"],
        created_at=r["created_at"],
        updated_at=r["updated_at"],
        closed_at=r["closed_at"],
        tokens=r["tokens"],
        cost_usd=r["cost_usd"],
        protocol=r["protocol"],
        failures=r["failures"],
        grants=r["grants"],
        opened_by=r["opened_by"],
        summon=Summon.model_validate_json(r["summon"]) if r["summon"] else None,
        approved_tree=r["approved_tree"],
    )


def to_turn(r: sqlite3.Row) -> Turn:
    return Turn(
        id=r["id"],
        task_id=r["task_id"],
        seq=r["seq"],
        role=r["role"],
        status=r["status"],
        output=r["output"],
        marker=r["marker"],
        unmarked=bool(r["unmarked"]),
        marker_source=r["marker_source"],
        marker_doubt=r["marker_doubt"],
        error=r["error"],
        tree=r["tree"],
        session_id=r["session_id"],
        tree_before=r["tree_before"],
        resumed_from=r["resumed_from"],
        started_at=r["started_at"],
        ended_at=r["ended_at"],
        structured=_object(r["structured"]),
    )


def _object(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    data = json.loads(raw)
    return data if isinstance(data, dict) else None


def to_escalation(r: sqlite3.Row) -> Escalation:
    return Escalation(
        id=r["id"],
        task_id=r["task_id"],
        kind=r["kind"],
        question=r["question"],
        options=tuple(json.loads(r["options"])),
        reason=r["reason"],
        status=r["status"],
        answer=r["answer"],
        answered_by=r["answered_by"],
        created_at=r["created_at"],
        answered_at=r["answered_at"],
    )


def to_outbox(r: sqlite3.Row) -> OutboxRow:
    return OutboxRow(
        id=r["id"],
        key=r["key"],
        task_id=r["task_id"],
        room=RoomRef(r["platform"], r["channel"], r["thread"]),
        text=r["text"],
        persona=r["persona"],
        actions=tuple(Action(**a) for a in json.loads(r["actions"])),
        status=r["status"],
        message_id=r["message_id"],
        attempts=r["attempts"],
        last_error=r["last_error"],
        next_try_at=r["next_try_at"],
        claimed_by=r["claimed_by"],
        claimed_until=r["claimed_until"],
        card=Card.from_json(json.loads(r["card"])) if r["card"] else None,
        private_to=r["private_to"],
        in_reply_to=r["in_reply_to"],
    )


def insert_turn(
    db: sqlite3.Connection,
    task: Task,
    role: str,
    owner: str,
    now: float,
    tree_before: str | None,
    resumed_from: str | None,
) -> Turn:
    """The task's next turn, `running`, numbered after its last one (the caller has already
    checked the task's version and lease in the same transaction)."""
    inserted = one(
        db,
        "INSERT INTO turns (task_id, seq, role, phase, status, tree_before,"
        " resumed_from, engine_id, started_at)"
        " SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, 'running', ?, ?, ?, ?"
        " FROM turns WHERE task_id=? RETURNING *",
        (task.id, role, task.status, tree_before, resumed_from, owner, now, task.id),
    )
    return to_turn(inserted)
