"""Row conversion and the small statements the store runs inside its transactions."""

from __future__ import annotations

import json
from typing import Any

import aiosqlite

from rooms.model import Action, Card, RoomRef, Summon, Task, Turn
from rooms.records import Escalation, OutboxDraft, OutboxRow


class Abort(Exception):
    """Raised inside a transaction to roll it back and report a lost race to the caller."""


async def record_event(db: aiosqlite.Connection, event_id: str, now: float) -> bool:
    """True when the inbound event id is new (and now recorded)."""
    cursor = await db.execute(
        "INSERT INTO events (event_id, at) VALUES (?, ?) ON CONFLICT(event_id) DO NOTHING",
        (event_id, now),
    )
    return cursor.rowcount == 1


async def ensure_room(db: aiosqlite.Connection, room: RoomRef, group: str, now: float) -> None:
    await db.execute(
        "INSERT INTO groups (name, created_at) VALUES (?, ?) ON CONFLICT(name) DO NOTHING",
        (group, now),
    )
    await db.execute(
        "INSERT INTO rooms (key, platform, channel, thread, group_name, created_at)"
        " VALUES (?,?,?,?,?,?) ON CONFLICT(key) DO NOTHING",
        (room.key, room.platform, room.channel, room.thread, group, now),
    )


async def enqueue(
    db: aiosqlite.Connection, draft: OutboxDraft, task_id: int | None, now: float
) -> None:
    """Add one outbox row; a key seen before is ignored (enqueueing is idempotent)."""
    actions = json.dumps(
        [
            {"action": a.action, "label": a.label, "value": a.value, "style": a.style}
            for a in draft.actions
        ]
    )
    card = json.dumps(draft.card.to_json()) if draft.card is not None else None
    await db.execute(
        "INSERT INTO outbox (key, task_id, room, text, persona, actions, card, private_to,"
        " in_reply_to, created_at) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(key) DO NOTHING",
        (
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
        ),
    )


async def one(db: aiosqlite.Connection, sql: str, args: tuple[Any, ...] = ()) -> Any:
    rows = list(await db.execute_fetchall(sql, args))
    return rows[0] if rows else None


async def load_task(db: aiosqlite.Connection, task_id: int) -> Task:
    row = await one(db, "SELECT * FROM tasks WHERE id=?", (task_id,))
    if row is None:
        raise Abort
    return to_task(row)


def to_task(r: aiosqlite.Row) -> Task:
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
        tokens=r["tokens"],
        cost_usd=r["cost_usd"],
        protocol=r["protocol"],
        failures=r["failures"],
        grants=r["grants"],
        opened_by=r["opened_by"],
        summon=Summon.model_validate_json(r["summon"]) if r["summon"] else None,
    )


def to_turn(r: aiosqlite.Row) -> Turn:
    return Turn(
        id=r["id"],
        task_id=r["task_id"],
        seq=r["seq"],
        role=r["role"],
        status=r["status"],
        output=r["output"],
        marker=r["marker"],
        unmarked=bool(r["unmarked"]),
        error=r["error"],
        tree=r["tree"],
        session_id=r["session_id"],
        tree_before=r["tree_before"],
        resumed_from=r["resumed_from"],
        started_at=r["started_at"],
        ended_at=r["ended_at"],
    )


def to_escalation(r: aiosqlite.Row) -> Escalation:
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


def to_outbox(r: aiosqlite.Row) -> OutboxRow:
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
