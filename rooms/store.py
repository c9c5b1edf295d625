"""The store: SQLite through one long-lived aiosqlite connection (DESIGN §8, integrations §11).

The store is the source of truth. Every status change is a compare-and-swap on the task's
version; composite writes are single `BEGIN IMMEDIATE … COMMIT` transactions guarded by an
asyncio lock, because the one connection is shared by many coroutines and their statements must
never interleave into another's transaction. Several stores (processes) may share one file: a
lease on each task decides who drives it, and UNIQUE(task_id, seq) makes every turn run once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import aiosqlite

from rooms.model import Firing, RoomRef, Ruling, Task, Turn
from rooms.records import (
    Change,
    Escalation,
    FiringRow,
    Message,
    OutboxDraft,
    OutboxRow,
    VerdictRow,
)
from rooms.schema import MIGRATIONS
from rooms.store_apply import apply_change
from rooms.store_rows import (
    Abort,
    enqueue,
    ensure_room,
    load_task,
    one,
    record_event,
    to_escalation,
    to_outbox,
    to_task,
    to_turn,
)

BUSY_TIMEOUT_MS = 10_000


class StoreError(RuntimeError):
    """The database cannot be used: not a SQLite file, or written by a newer Tribunal."""


class Store:
    def __init__(self, db: aiosqlite.Connection, path: str) -> None:
        self._db = db
        self.path = path
        self._lock = asyncio.Lock()

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: str) -> Store:
        db = await aiosqlite.connect(path, isolation_level=None)  # autocommit; we BEGIN ourselves
        try:
            db.row_factory = aiosqlite.Row
            for pragma in (
                "PRAGMA journal_mode=WAL",
                "PRAGMA synchronous=NORMAL",
                "PRAGMA foreign_keys=ON",
                f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}",
            ):
                await db.execute(pragma)
            store = cls(db, path)
            await store._migrate()
        except sqlite3.DatabaseError as exc:
            await db.close()
            raise StoreError(f"cannot use {path} as the Tribunal database: {exc}") from exc
        except BaseException:
            await db.close()
            raise
        return store

    async def close(self) -> None:
        async with self._lock:
            await self._db.close()

    async def _migrate(self) -> None:
        for _ in MIGRATIONS:
            async with self._tx() as db:
                # Read the version inside the write lock so two processes opening a fresh file
                # at once cannot both apply the same step.
                version = int((await one(db, "PRAGMA user_version"))[0])
                if version > len(MIGRATIONS):
                    raise StoreError(
                        f"{self.path} has schema version {version}, newer than this Tribunal"
                        f" ({len(MIGRATIONS)}): upgrade Tribunal, do not downgrade the database"
                    )
                if version == len(MIGRATIONS):
                    return
                for sql in MIGRATIONS[version]:
                    await db.execute(sql)
                await db.execute(f"PRAGMA user_version={version + 1}")

    async def schema_version(self) -> int:
        rows = await self._rows("PRAGMA user_version")
        return int(rows[0][0])

    # -- plumbing ------------------------------------------------------------------------------

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction. A failure or a cancellation anywhere inside rolls it back.

        aiosqlite runs statements in order on one worker thread, so a ROLLBACK issued after a
        cancelled statement still runs after it."""
        async with self._lock:
            try:
                await self._db.execute("BEGIN IMMEDIATE")
                yield self._db
            except BaseException:
                # When BEGIN itself failed (busy) there is nothing to roll back.
                with contextlib.suppress(sqlite3.OperationalError):
                    await self._db.execute("ROLLBACK")
                raise
            else:
                try:
                    await self._db.execute("COMMIT")
                except sqlite3.Error:
                    with contextlib.suppress(sqlite3.OperationalError):
                        await self._db.execute("ROLLBACK")
                    raise

    async def _rows(self, sql: str, args: Iterable[Any] = ()) -> list[aiosqlite.Row]:
        async with self._lock:  # never read in the middle of another coroutine's transaction
            return list(await self._db.execute_fetchall(sql, tuple(args)))

    # -- events (inbound de-duplication) -------------------------------------------------------

    async def record_event(self, event_id: str, now: float) -> bool:
        """True when the event id is new (and is now recorded), False when it was seen before."""
        async with self._tx() as db:
            return await record_event(db, event_id, now)

    async def seen_event(self, event_id: str) -> bool:
        return bool(await self._rows("SELECT 1 FROM events WHERE event_id=?", (event_id,)))

    # -- tasks ---------------------------------------------------------------------------------

    async def open_task(
        self,
        room: RoomRef,
        group: str,
        text: str,
        user: str,
        now: float,
        *,
        event_id: str | None = None,
        outbox: list[OutboxDraft] | None = None,
    ) -> Task | None:
        """A new task in `owner_turn`; None when the room already has an open task or the event
        was handled before. The acknowledgement is enqueued in the same transaction."""
        try:
            async with self._tx() as db:
                if event_id and not await record_event(db, event_id, now):
                    raise Abort
                await ensure_room(db, room, group, now)
                cursor = await db.execute(
                    "INSERT INTO tasks (room, group_name, text, opened_by, status, created_at,"
                    " updated_at) VALUES (?,?,?,?, 'owner_turn', ?, ?)",
                    (room.key, group, text, user, now, now),
                )
                task_id = int(cursor.lastrowid or 0)
                for draft in outbox or []:
                    await enqueue(db, draft, task_id, now)
                return await load_task(db, task_id)
        except Abort:
            return None
        except sqlite3.IntegrityError:
            return None  # tasks_one_open_per_room: lost to another open task in this room

    async def task(self, task_id: int) -> Task | None:
        rows = await self._rows("SELECT * FROM tasks WHERE id=?", (task_id,))
        return to_task(rows[0]) if rows else None

    async def open_task_in(self, room: RoomRef) -> Task | None:
        rows = await self._rows(
            "SELECT * FROM tasks WHERE room=? AND status != 'closed'", (room.key,)
        )
        return to_task(rows[0]) if rows else None

    async def latest_task_in(self, room: RoomRef) -> Task | None:
        rows = await self._rows(
            "SELECT * FROM tasks WHERE room=? ORDER BY id DESC LIMIT 1", (room.key,)
        )
        return to_task(rows[0]) if rows else None

    async def open_tasks(self) -> list[Task]:
        rows = await self._rows("SELECT * FROM tasks WHERE status != 'closed' ORDER BY id")
        return [to_task(r) for r in rows]

    async def room(self, key: str) -> RoomRef | None:
        rows = await self._rows("SELECT platform, channel, thread FROM rooms WHERE key=?", (key,))
        return RoomRef(rows[0][0], rows[0][1], rows[0][2]) if rows else None

    async def task_extras(self, task_id: int) -> dict[str, Any]:
        """Columns the Task model does not carry: failures, grants, lease, opener."""
        rows = await self._rows(
            "SELECT failures, grants, lease_owner, lease_until, opened_by FROM tasks WHERE id=?",
            (task_id,),
        )
        return dict(rows[0]) if rows else {}

    async def apply(self, change: Change) -> Task | None:
        """Apply one composite change atomically. Returns the task as it is afterwards, or None
        when the change lost (stale version, lease not held, turn no longer running, escalation
        no longer open, event already handled); then nothing at all was written."""
        try:
            async with self._tx() as db:
                return await apply_change(db, change)
        except Abort:
            return None

    # -- leases --------------------------------------------------------------------------------

    async def claim(self, task_id: int, owner: str, now: float, lease_s: float) -> bool:
        """Take the task's lease if it is free, expired or already ours."""
        async with self._tx() as db:
            cursor = await db.execute(
                "UPDATE tasks SET lease_owner=?, lease_until=? WHERE id=? AND status != 'closed'"
                " AND (lease_owner IS NULL OR lease_owner=? OR lease_until < ?)",
                (owner, now + lease_s, task_id, owner, now),
            )
            return cursor.rowcount == 1

    async def renew(self, task_id: int, owner: str, now: float, lease_s: float) -> bool:
        """Extend our lease; False when it was taken over or the task was closed."""
        async with self._tx() as db:
            cursor = await db.execute(
                "UPDATE tasks SET lease_until=? WHERE id=? AND lease_owner=?"
                " AND status != 'closed'",
                (now + lease_s, task_id, owner),
            )
            return cursor.rowcount == 1

    async def release(self, task_id: int, owner: str) -> None:
        async with self._tx() as db:
            await db.execute(
                "UPDATE tasks SET lease_owner=NULL, lease_until=NULL WHERE id=? AND lease_owner=?",
                (task_id, owner),
            )

    # -- turns ---------------------------------------------------------------------------------

    async def begin_turn(
        self,
        task: Task,
        role: str,
        owner: str,
        now: float,
        *,
        tree_before: str | None = None,
        resumed_from: str | None = None,
        wall: float | None = None,
    ) -> Turn | None:
        """Insert the next turn as `running`, if `owner` still holds the lease (at wall time
        `wall`, default `now`) and the task is still at `task.version`; None otherwise.
        UNIQUE(task_id, seq) backs this up."""
        lease_now = now if wall is None else wall
        try:
            async with self._tx() as db:
                row = await one(
                    db, "SELECT version, lease_owner, lease_until FROM tasks WHERE id=?", (task.id,)
                )
                if row is None or row[0] != task.version or row[1] != owner:
                    raise Abort
                if row[2] < lease_now:
                    raise Abort
                seq = (
                    await one(
                        db,
                        "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE task_id=?",
                        (task.id,),
                    )
                )[0]
                cursor = await db.execute(
                    "INSERT INTO turns (task_id, seq, role, phase, status, tree_before,"
                    " resumed_from, engine_id, started_at) VALUES (?,?,?,?, 'running', ?,?,?,?)",
                    (task.id, seq, role, task.status, tree_before, resumed_from, owner, now),
                )
                await db.execute("UPDATE tasks SET turns = turns + 1 WHERE id=?", (task.id,))
                return to_turn(await one(db, "SELECT * FROM turns WHERE id=?", (cursor.lastrowid,)))
        except (Abort, sqlite3.IntegrityError):
            return None

    async def interrupt_turns(
        self, task_id: int, reason: str, now: float, *, output: str = "", turn_id: int | None = None
    ) -> list[Turn]:
        """Mark running turns (all of the task's, or one) interrupted, keeping any output."""
        async with self._tx() as db:
            where = "task_id=? AND status='running'" + (" AND id=?" if turn_id else "")
            args: tuple[Any, ...] = (task_id, turn_id) if turn_id else (task_id,)
            rows = await db.execute_fetchall(f"SELECT * FROM turns WHERE {where}", args)
            await db.execute(
                "UPDATE turns SET status='interrupted', error=?, ended_at=?,"
                f" output=CASE WHEN ?='' THEN output ELSE ? END WHERE {where}",
                (reason, now, output, output, *args),
            )
            return [to_turn(r) for r in rows]

    async def turns(self, task_id: int) -> list[Turn]:
        rows = await self._rows("SELECT * FROM turns WHERE task_id=? ORDER BY seq", (task_id,))
        return [to_turn(r) for r in rows]

    async def turn_phases(self, task_id: int) -> dict[int, str]:
        """seq → the task status the turn ran in (a finalize turn is an owner turn too)."""
        rows = await self._rows("SELECT seq, phase FROM turns WHERE task_id=?", (task_id,))
        return {int(r[0]): str(r[1]) for r in rows}

    async def usage_totals(self, task_id: int) -> tuple[int, int, float]:
        rows = await self._rows(
            "SELECT COALESCE(SUM(input_tokens),0), COALESCE(SUM(output_tokens),0),"
            " COALESCE(SUM(cost_usd),0) FROM usage WHERE task_id=?",
            (task_id,),
        )
        return int(rows[0][0]), int(rows[0][1]), float(rows[0][2])

    # -- history -------------------------------------------------------------------------------

    async def messages(self, task_id: int) -> list[Message]:
        rows = await self._rows("SELECT * FROM messages WHERE task_id=? ORDER BY id", (task_id,))
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

    async def firings(self, task_id: int) -> list[FiringRow]:
        rows = await self._rows("SELECT * FROM firings WHERE task_id=? ORDER BY id", (task_id,))
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

    async def verdicts(self, task_id: int) -> list[VerdictRow]:
        rows = await self._rows(
            "SELECT v.*, t.seq FROM verdicts v JOIN turns t ON t.id = v.turn_id"
            " WHERE v.task_id=? ORDER BY v.id",
            (task_id,),
        )
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
            )
            for r in rows
        ]

    async def escalations(self, task_id: int) -> list[Escalation]:
        rows = await self._rows("SELECT * FROM escalations WHERE task_id=? ORDER BY id", (task_id,))
        return [to_escalation(r) for r in rows]

    async def escalation(self, escalation_id: int) -> Escalation | None:
        rows = await self._rows("SELECT * FROM escalations WHERE id=?", (escalation_id,))
        return to_escalation(rows[0]) if rows else None

    async def open_escalation(self, task_id: int) -> Escalation | None:
        rows = await self._rows(
            "SELECT * FROM escalations WHERE task_id=? AND status='open'", (task_id,)
        )
        return to_escalation(rows[0]) if rows else None

    # -- outbox --------------------------------------------------------------------------------

    async def enqueue(
        self, drafts: list[OutboxDraft], now: float, *, group: str, event_id: str | None = None
    ) -> bool:
        """Enqueue replies that change nothing else (status, refusals). With `event_id` the event
        is recorded in the same transaction; False when it was handled before."""
        try:
            async with self._tx() as db:
                if event_id and not await record_event(db, event_id, now):
                    raise Abort
                for draft in drafts:
                    await ensure_room(db, draft.room, group, now)
                    await enqueue(db, draft, None, now)
                return True
        except Abort:
            return False

    async def pending_outbox(self, limit: int = 200) -> list[OutboxRow]:
        """Pending rows in id order, due or not, claimed or not: the deliverer keeps each room's
        order, so a row that must wait holds back the rows after it in its room."""
        rows = await self._rows(
            "SELECT o.*, r.platform, r.channel, r.thread FROM outbox o"
            " JOIN rooms r ON r.key = o.room WHERE o.status='pending' ORDER BY o.id LIMIT ?",
            (limit,),
        )
        return [to_outbox(r) for r in rows]

    async def outbox(self, *, status: str | None = None) -> list[OutboxRow]:
        sql = (
            "SELECT o.*, r.platform, r.channel, r.thread FROM outbox o"
            " JOIN rooms r ON r.key = o.room"
        )
        args: tuple[Any, ...] = ()
        if status:
            sql += " WHERE o.status=?"
            args = (status,)
        rows = await self._rows(sql + " ORDER BY o.id", args)
        return [to_outbox(r) for r in rows]

    async def count_pending(self) -> int:
        rows = await self._rows("SELECT COUNT(*) FROM outbox WHERE status='pending'")
        return int(rows[0][0])

    async def claim_outbox(self, row_id: int, owner: str, now: float, lease_s: float) -> bool:
        """Take one pending row for delivery so that two deliverers do not post it both."""
        async with self._tx() as db:
            cursor = await db.execute(
                "UPDATE outbox SET claimed_by=?, claimed_until=?, attempts = attempts + 1"
                " WHERE id=? AND status='pending'"
                " AND (claimed_by IS NULL OR claimed_by=? OR claimed_until < ?)",
                (owner, now + lease_s, row_id, owner, now),
            )
            return cursor.rowcount == 1

    async def mark_sent(self, row_id: int, message_id: str | None, now: float) -> None:
        async with self._tx() as db:
            await db.execute(
                "UPDATE outbox SET status='sent', message_id=?, sent_at=?, claimed_by=NULL,"
                " claimed_until=NULL, last_error=NULL WHERE id=?",
                (message_id, now, row_id),
            )

    async def mark_failed(
        self, row_id: int, error: str, retry_at: float, *, give_up: bool = False
    ) -> None:
        """Record a failed attempt; the row stays pending until `retry_at` (or is dead)."""
        async with self._tx() as db:
            await db.execute(
                "UPDATE outbox SET last_error=?, next_try_at=?, claimed_by=NULL,"
                " claimed_until=NULL, status=CASE WHEN ? THEN 'dead' ELSE status END WHERE id=?",
                (error[:2000], retry_at, give_up, row_id),
            )
