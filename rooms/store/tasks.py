"""The store: SQLite through one long-lived aiosqlite connection (DESIGN §8, integrations §11).

The store is the source of truth. Every status change is a compare-and-swap on the task's
version; composite writes are single `BEGIN IMMEDIATE … COMMIT` transactions guarded by an
asyncio lock, because the one connection is shared by many coroutines and their statements must
never interleave into another's transaction. Several stores (processes) may share one file: a
lease on each task decides who drives it, and UNIQUE(task_id, seq) makes every turn run once.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from typing import Any, TypedDict

import aiosqlite

from rooms.model import Firing, RoomRef, Ruling, Task, Turn
from rooms.protocols import DEFAULT as DEFAULT_PROTOCOL
from rooms.protocols import table_for
from rooms.records import (
    Change,
    Escalation,
    FiringRow,
    Message,
    OutboxDraft,
    VerdictRow,
)
from rooms.store.apply import apply_change
from rooms.store.outbox import OutboxStore
from rooms.store.panels import PanelStore
from rooms.store.rows import (
    Abort,
    enqueue,
    ensure_room,
    load_task,
    one,
    record_event,
    to_escalation,
    to_task,
    to_turn,
)
from rooms.store.schema import MIGRATIONS

BUSY_TIMEOUT_MS = 10_000


async def _switch_to_wal(db: aiosqlite.Connection) -> None:
    """Switching a fresh file to WAL needs an exclusive lock, and SQLite answers "locked" at
    once (without its busy handler) while another process opens the same file: retry then."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            await db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.02)


class TaskExtras(TypedDict):
    """The columns of a task that say who drives it and what it used: typed, read by key."""

    failures: int
    grants: int
    lease_owner: str | None
    lease_until: float | None
    opened_by: str


class StoreError(RuntimeError):
    """The database cannot be used: not a SQLite file, or written by a newer Tribunal."""


class Store(OutboxStore, PanelStore):
    # -- opening -------------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: str) -> Store:
        db = await aiosqlite.connect(path, isolation_level=None)  # autocommit; we BEGIN ourselves
        try:
            db.row_factory = aiosqlite.Row
            await db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await _switch_to_wal(db)
            # Foreign keys are switched on once the schema is up to date (see schema.py).
            await db.execute("PRAGMA synchronous=NORMAL")
            store = cls(db, path)
            await store._migrate()
            await db.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            await db.close()
            raise StoreError(f"cannot use {path} as the Tribunal database: {exc}") from exc
        except BaseException:
            await db.close()
            raise
        return store

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
                broken = await db.execute_fetchall("PRAGMA foreign_key_check")
                if broken:
                    raise StoreError(
                        f"{self.path}: migration {version + 1} left dangling references: "
                        f"{[tuple(r) for r in broken][:5]}"
                    )
                await db.execute(f"PRAGMA user_version={version + 1}")

    async def schema_version(self) -> int:
        rows = await self._rows("PRAGMA user_version")
        return int(rows[0][0])

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
        protocol: str = DEFAULT_PROTOCOL,
    ) -> Task | None:
        """A new task of `protocol`, in its initial status (the pair's: `owner_turn`); None when
        the room already has an open task or the event was handled before. The acknowledgement
        is enqueued in the same transaction."""
        initial = table_for(protocol).initial  # UnknownProtocol before anything is written
        try:
            async with self._tx() as db:
                if event_id and not await record_event(db, event_id, now):
                    raise Abort
                await ensure_room(db, room, group, now)
                cursor = await db.execute(
                    "INSERT INTO tasks (room, group_name, text, opened_by, protocol, status,"
                    " created_at, updated_at) VALUES (?,?,?,?,?,?,?,?)",
                    (room.key, group, text, user, protocol, initial, now, now),
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

    async def task_extras(self, task_id: int) -> TaskExtras | None:
        """The task's counters and lease, for inspection (the engine reads them on `Task`)."""
        rows = await self._rows(
            "SELECT failures, grants, lease_owner, lease_until, opened_by FROM tasks WHERE id=?",
            (task_id,),
        )
        if not rows:
            return None
        r = rows[0]
        return TaskExtras(
            failures=r["failures"],
            grants=r["grants"],
            lease_owner=r["lease_owner"],
            lease_until=r["lease_until"],
            opened_by=r["opened_by"],
        )

    async def apply(self, change: Change) -> Task | None:
        """Apply one composite change atomically. Returns the task as it is afterwards, or None
        when the change lost (stale version, lease not held, turn no longer running, escalation
        no longer open, event already handled); then nothing at all was written."""
        try:
            async with self._tx() as db:
                return await apply_change(db, change, table_for)
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
                panel_id=r["panel_id"],
                tally=json.loads(r["tally"]) if r["tally"] else None,
                fairness=json.loads(r["fairness"]) if r["fairness"] else None,
            )
            for r in rows
        ]

    async def waited_s(self, task_id: int) -> float:
        """Seconds the task spent waiting for people, over its answered escalations: that time
        is not the pair's, so the wall-time ceiling does not count it."""
        rows = await self._rows(
            "SELECT COALESCE(SUM(answered_at - created_at), 0) FROM escalations"
            " WHERE task_id=? AND answered_at IS NOT NULL",
            (task_id,),
        )
        return float(rows[0][0])

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
