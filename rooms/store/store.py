"""The store: SQLite through one long-lived aiosqlite connection (DESIGN §8, integrations §11),
or PostgreSQL when TRIBUNAL_DB is a `postgresql://` URL (postgres.py; one copy of the logic for
both, connection.py).

The store is the source of truth. Every status change is a compare-and-swap on the task's
version; composite writes are single `BEGIN IMMEDIATE … COMMIT` transactions guarded by an
asyncio lock, because the one connection is shared by many coroutines and their statements must
never interleave into another's transaction (on PostgreSQL each transaction has a connection to
itself). Several stores (processes) may share one database: a lease on each task decides who
drives it, and UNIQUE(task_id, seq) makes every turn run once.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from typing import Any, TypedDict

import aiosqlite

from rooms.base import open_caps
from rooms.base.machine import DEFAULT_PROTOCOL, registered_table
from rooms.base.model import RoomRef, Task, Turn
from rooms.base.open_caps import OpenCaps
from rooms.base.records import (
    Change,
    Escalation,
    FiringRow,
    Message,
    OutboxDraft,
    Usage,
    VerdictRow,
)
from rooms.judge.history import History
from rooms.store import history_rows, migrate
from rooms.store.apply import apply_change
from rooms.store.connection import SqliteBackend
from rooms.store.dashboard_auth import DashboardAuthStore
from rooms.store.dashboard_reads import DashboardCounts, DashboardReads
from rooms.store.files import make_private
from rooms.store.listen import install_notify, notifications
from rooms.store.migrate import SchemaError
from rooms.store.outbox import OutboxStore
from rooms.store.outcomes import OutcomeStore
from rooms.store.panels import PanelStore
from rooms.store.postgres import PostgresBackend, is_postgres, redact
from rooms.store.progress_rows import ProgressStore
from rooms.store.prune import PruneStore
from rooms.store.rows import (
    Abort,
    enqueue_all,
    ensure_room,
    insert_turn,
    one,
    record_event,
    to_escalation,
    to_task,
    to_turn,
)
from rooms.store.steps import StepStore
from rooms.store.worktrees import WorktreeStore

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
    """The database cannot be used: not a SQLite file, not reachable, or written by a newer
    Tribunal."""


class Store(
    OutboxStore,
    PanelStore,
    PruneStore,
    StepStore,
    WorktreeStore,
    ProgressStore,
    DashboardReads,
    DashboardCounts,
    DashboardAuthStore,
    OutcomeStore,
):
    # -- opening -------------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: str) -> Store:
        """The store at `path`: a SQLite file, or a `postgresql://` URL (TRIBUNAL_DB). Applies
        the missing migrations; StoreError when the database cannot be used."""
        if is_postgres(path):
            return await cls._open_postgres(path)
        make_private(path)  # 0600, and so are the -wal and -shm files SQLite makes beside it
        db = await aiosqlite.connect(path, isolation_level=None)  # autocommit; we BEGIN ourselves
        try:
            db.row_factory = aiosqlite.Row
            await db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await _switch_to_wal(db)
            # Foreign keys are switched on once the schema is up to date (see schema.py).
            await db.execute("PRAGMA synchronous=NORMAL")
            store = cls(SqliteBackend(db), path)
            await store._migrate()
            await db.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            await db.close()
            raise StoreError(f"cannot use {path} as the Tribunal database: {exc}") from exc
        except SchemaError as exc:
            await db.close()
            raise StoreError(str(exc)) from exc
        except BaseException:
            await db.close()
            raise
        return store

    @classmethod
    async def _open_postgres(cls, url: str) -> Store:
        where = redact(url)
        try:
            backend = await PostgresBackend.open(url)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot use {where} as the Tribunal database: {exc}") from exc
        store = cls(backend, where)
        try:
            await store._migrate()
            await store._transact(install_notify, isolated=False)
        except (sqlite3.DatabaseError, SchemaError) as exc:
            await backend.close()
            raise StoreError(f"cannot use {where} as the Tribunal database: {exc}") from exc
        except BaseException:
            await backend.close()
            raise
        store.url = url
        return store

    url: str | None = None  # the PostgreSQL URL (with its password) the listener connects to

    @classmethod
    async def schema_of(cls, target: str) -> int:
        """The schema version of the database at `target` (0: empty), read without changing
        it (doctor, `tribunal migrate --check`). StoreError when it cannot be read."""
        if is_postgres(target):
            try:
                backend = await PostgresBackend.open(target, size=1)
            except sqlite3.DatabaseError as exc:
                raise StoreError(str(exc)) from exc
            try:
                return await backend.call(lambda db: migrate.version(db, "postgresql"))
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"cannot read {redact(target)}: {exc}") from exc
            finally:
                await backend.close()
        try:
            async with aiosqlite.connect(f"file:{target}?mode=ro", uri=True) as db:
                rows = await db.execute_fetchall("PRAGMA user_version")
                return int(next(iter(rows))[0])
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot read {target}: {exc}") from exc

    def wakes(self) -> AsyncIterator[str] | None:
        """The database's wake-up notifications (listen.py), for as long as they are iterated;
        None for SQLite, which has none (the engine then polls only)."""
        return notifications(self.url) if self.url is not None else None

    async def _migrate(self) -> None:
        dialect, where = self.dialect, self.path
        # Each step in its own transaction, the version read inside it (under the write lock)
        # so that two processes opening a fresh database cannot both apply a step.
        while await self._transact(
            lambda db: migrate.next_step(db, dialect, where), isolated=False
        ):
            pass

    async def schema_version(self) -> int:
        dialect = self.dialect
        return await self._read(lambda db: migrate.version(db, dialect))

    # -- events (inbound de-duplication) -------------------------------------------------------

    async def record_event(self, event_id: str, now: float) -> bool:
        """True when the event id is new (and is now recorded), False when it was seen before."""
        return await self._transact(lambda db: record_event(db, event_id, now))

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
        caps: OpenCaps | None = None,
    ) -> Task | None:
        """A new task of `protocol`, in its initial status (the pair's: `owner_turn`); None when
        the room already has an open task or the event was handled before. The acknowledgement
        is enqueued in the same transaction. `caps`: raises open_caps.CapReached (nothing
        written) when the group, or `user` in it, already has that many open tasks."""
        initial = registered_table(protocol).initial  # UnknownProtocol before anything is written

        def insert(db: sqlite3.Connection) -> Task:
            if event_id and not record_event(db, event_id, now):
                raise Abort
            if caps is not None:
                channel_open, theirs = db.execute(
                    "SELECT COUNT(*), COALESCE(SUM(CASE WHEN opened_by = ? THEN 1 ELSE 0 END), 0)"
                    " FROM tasks"
                    " WHERE group_name = ? AND status != 'closed'",
                    (user, group),
                ).fetchone()
                open_caps.check(user, caps, channel_open=channel_open, theirs=theirs)
            ensure_room(db, room, group, now)
            row = one(
                db,
                "INSERT INTO tasks (room, group_name, text, opened_by, protocol, status,"
                " created_at, updated_at) VALUES (?,?,?,?,?,?,?,?) RETURNING *",
                (room.key, group, text, user, protocol, initial, now, now),
            )
            enqueue_all(db, outbox or [], row["id"], now)
            return to_task(row)

        try:
            return await self._transact(insert)
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
            return await self._transact(lambda db: apply_change(db, change, registered_table))
        except Abort:
            return None

    # -- leases --------------------------------------------------------------------------------

    async def claim(self, task_id: int, owner: str, now: float, lease_s: float) -> bool:
        """Take the task's lease if it is free, expired or already ours."""
        return await self.claim_task(task_id, owner, now, lease_s) is not None

    async def claim_task(self, task_id: int, owner: str, now: float, lease_s: float) -> Task | None:
        """`claim`, returning the task as it is once the lease is ours (None: not claimed). One
        statement: the claim and the read the driver needs next."""
        rows = await self._write(
            "UPDATE tasks SET lease_owner=?, lease_until=? WHERE id=? AND status != 'closed'"
            " AND (lease_owner IS NULL OR lease_owner=? OR lease_until < ?) RETURNING *",
            (owner, now + lease_s, task_id, owner, now),
        )
        return to_task(rows[0]) if rows else None

    async def renew(self, task_id: int, owner: str, now: float, lease_s: float) -> bool:
        """Extend our lease; False when it was taken over or the task was closed."""
        changed = await self._write_count(
            "UPDATE tasks SET lease_until=? WHERE id=? AND lease_owner=? AND status != 'closed'",
            (now + lease_s, task_id, owner),
        )
        return changed == 1

    async def release(self, task_id: int, owner: str) -> None:
        await self._write_count(
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

        def insert(db: sqlite3.Connection) -> Turn:
            # The guard (version and lease) and the count in one statement: no row changed
            # means the race is lost.
            cursor = db.execute(
                "UPDATE tasks SET turns = turns + 1 WHERE id=? AND version=?"
                " AND lease_owner=? AND lease_until >= ?",
                (task.id, task.version, owner, lease_now),
            )
            if cursor.rowcount != 1:
                raise Abort
            return insert_turn(db, task, role, owner, now, tree_before, resumed_from)

        try:
            return await self._transact(insert)
        except (Abort, sqlite3.IntegrityError):
            return None

    async def interrupt_turns(
        self,
        task_id: int,
        reason: str,
        now: float,
        *,
        output: str = "",
        turn_id: int | None = None,
        usage: Usage | None = None,
    ) -> list[Turn]:
        """Mark running turns (all of the task's, or one) interrupted, keeping any output; with
        `turn_id`, the `usage` the turn spent before it was cut short is charged to the task
        (once: only when this call is what ended the turn). Returns them as they were
        (running)."""
        where = "task_id=? AND status='running'" + (" AND id=?" if turn_id else "")
        args: tuple[Any, ...] = (task_id, turn_id) if turn_id else (task_id,)
        spent = usage is not None and (usage.tokens > 0 or usage.cost_usd > 0)

        def interrupt(db: sqlite3.Connection) -> list[Turn]:
            rows = db.execute(f"SELECT * FROM turns WHERE {where} ORDER BY seq", args).fetchall()
            if rows:
                db.execute(
                    "UPDATE turns SET status='interrupted', error=?, ended_at=?,"
                    f" output=CASE WHEN ?='' THEN output ELSE ? END WHERE {where}",
                    (reason, now, output, output, *args),
                )
            if turn_id and rows and usage is not None and spent:
                db.execute(
                    "INSERT INTO usage (turn_id, task_id, input_tokens, output_tokens, cost_usd,"
                    " at) VALUES (?,?,?,?,?,?)",
                    (
                        turn_id,
                        task_id,
                        usage.input_tokens,
                        usage.output_tokens,
                        usage.cost_usd,
                        now,
                    ),
                )
                db.execute(
                    "UPDATE tasks SET tokens = tokens + ?, cost_usd = cost_usd + ? WHERE id=?",
                    (usage.tokens, usage.cost_usd, task_id),
                )
            return [to_turn(r) for r in rows]

        return await self._transact(interrupt)

    async def turns(self, task_id: int) -> list[Turn]:
        return await self._read(lambda db: history_rows.turns(db, task_id))

    async def usage_totals(self, task_id: int) -> tuple[int, int, float]:
        rows = await self._rows(
            "SELECT COALESCE(SUM(input_tokens),0), COALESCE(SUM(output_tokens),0),"
            " COALESCE(SUM(cost_usd),0) FROM usage WHERE task_id=?",
            (task_id,),
        )
        return int(rows[0][0]), int(rows[0][1]), float(rows[0][2])

    async def turn_costs(self, task_id: int) -> dict[int, float]:
        """Each of the task's turns' cost by turn id (turns without usage are absent)."""
        rows = await self._rows("SELECT turn_id, cost_usd FROM usage WHERE task_id=?", (task_id,))
        return {int(r[0]): float(r[1]) for r in rows}

    # -- history -------------------------------------------------------------------------------

    async def history(self, task_id: int) -> History:
        """The task's turns, messages, rulings, firings and waiting time, in one round trip."""
        return await self._read(lambda db: history_rows.history(db, task_id))

    async def messages(self, task_id: int) -> list[Message]:
        return await self._read(lambda db: history_rows.messages(db, task_id))

    async def messages_and_task(self, task_id: int) -> tuple[list[Message], Task | None]:
        """The task's human messages and the task, in one round trip (what the driver reads
        again once a turn has run: people may have written or called the arbiter meanwhile)."""

        def read(db: sqlite3.Connection) -> tuple[list[Message], Task | None]:
            row = db.execute("SELECT * FROM tasks WHERE id=?", (task_id,)).fetchone()
            return history_rows.messages(db, task_id), to_task(row) if row else None

        return await self._read(read)

    async def firings(self, task_id: int) -> list[FiringRow]:
        return await self._read(lambda db: history_rows.firings(db, task_id))

    async def verdicts(self, task_id: int) -> list[VerdictRow]:
        return await self._read(lambda db: history_rows.verdicts(db, task_id))

    async def waited_s(self, task_id: int) -> float:
        """Seconds the task spent waiting for people, over its answered escalations: that time
        is not the pair's, so the wall-time ceiling does not count it."""
        return await self._read(lambda db: history_rows.waited_s(db, task_id))

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
