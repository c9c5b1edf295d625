"""The connection and transaction plumbing every part of the store shares, on either database.

The store's logic is written once, as plain functions of a DB-API connection (`fn(db)`, the
sqlite3 interface: `execute`, `executemany`, rows read by name or position) in portable SQL.
A `Backend` runs such a function on the one worker thread that owns the connection, as one
round trip from the event loop: aiosqlite's thread for SQLite (connection.py), a thread of our
own holding a psycopg connection for PostgreSQL (postgres.py, which also translates the SQL's
placeholders and the errors). The round trip to that thread, not the database, is what a busy
engine waits for; so a transaction (or a read of several tables) is one function and one round
trip (`_transact`, `_read`), and a write that is a single statement runs without BEGIN and
COMMIT (`_write`): either database makes one statement atomic on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeVar, cast

import aiosqlite

T = TypeVar("T")


class Retry(sqlite3.OperationalError):
    """Raised by a backend when its database gave up a transaction for a concurrent one
    (PostgreSQL's serialization failure: both changed one row; or a deadlock): run the whole
    function again. SQLite never raises it (BEGIN IMMEDIATE makes writers take turns)."""


RETRIES = 30  # a transaction that keeps losing to others this often is reported, not looped on


class Backend(Protocol):
    """One connection, used from one worker thread, one function per round trip."""

    dialect: str  # "sqlite" or "postgresql"
    serial: bool  # one connection for the whole store: calls take turns under the store's lock
    begin: str  # the statement that opens a write transaction (isolated: see _transact)
    begin_plain: str  # one that sees what others committed before each statement (migrations)

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T: ...

    async def close(self) -> None: ...


class SqliteBackend:
    """aiosqlite's connection: its worker thread runs our functions in order."""

    dialect = "sqlite"
    serial = True
    begin = "BEGIN IMMEDIATE"  # the write lock up front: writers never deadlock, never retry
    begin_plain = "BEGIN IMMEDIATE"

    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        run = cast(Callable[..., Awaitable[Any]], self.db._execute)  # aiosqlite's own queue
        return cast(T, await run(fn, self.db._conn))

    async def close(self) -> None:
        await self.db.close()


class StoreBase:
    """One connection shared by many coroutines, and the lock that keeps their statements out
    of each other's transactions."""

    def __init__(self, backend: Backend, path: str) -> None:
        self._backend = backend
        self.path = path
        self._lock = asyncio.Lock()

    @property
    def dialect(self) -> str:
        return self._backend.dialect

    async def close(self) -> None:
        async with self._lock:
            await self._backend.close()

    async def _on_thread(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` with the connection on its worker thread (the only thread that may use it),
        as one round trip. Under the lock, so nothing of another coroutine runs in between; the
        worker runs one function at a time, in order, so a function whose caller was cancelled
        still runs to its end before anything queued after it. A backend of several
        connections (PostgreSQL) gives each call one to itself, and needs no lock."""
        if not self._backend.serial:
            return await self._backend.call(fn)
        async with self._lock:
            return await self._backend.call(fn)

    async def _transact(self, fn: Callable[[sqlite3.Connection], T], *, isolated: bool = True) -> T:
        """One write transaction (BEGIN … COMMIT) around `fn`, in one round trip. Any exception
        in `fn` rolls it back and is raised here: all of it is written, or nothing. On
        PostgreSQL the transaction reads one snapshot (REPEATABLE READ) and runs again, whole,
        when the database gave it up because a concurrent one changed a row it changes too
        (`Retry`; postgres.py says why that level). `isolated=False`: each statement sees what
        others committed before it (a migration that waits for a lock, then reads the schema's
        version)."""
        begin = self._backend.begin if isolated else self._backend.begin_plain

        def transaction(db: sqlite3.Connection) -> T:
            db.execute(begin)  # when BEGIN fails (busy) there is nothing to undo
            try:
                result = fn(db)
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.OperationalError):
                    db.execute("ROLLBACK")
                raise
            return result

        for attempt in range(RETRIES):
            try:
                return await self._on_thread(transaction)
            except Retry:
                if attempt == RETRIES - 1:
                    raise
                await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))  # noqa: S311
        raise AssertionError("unreachable")

    async def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Several reads in one round trip. Each statement sees committed data; the lock keeps
        our own transactions from being half-seen."""
        return await self._on_thread(fn)

    async def _write(self, sql: str, args: Iterable[Any] = ()) -> list[sqlite3.Row]:
        """One write that is a single statement (atomic in autocommit mode, so no BEGIN and
        COMMIT). Returns the rows of its RETURNING clause, if it has one."""
        return await self._on_thread(lambda db: db.execute(sql, tuple(args)).fetchall())

    async def _write_count(self, sql: str, args: Iterable[Any] = ()) -> int:
        """`_write` for a statement without RETURNING: how many rows it changed."""
        return await self._on_thread(lambda db: db.execute(sql, tuple(args)).rowcount)

    async def _rows(self, sql: str, args: Iterable[Any] = ()) -> list[sqlite3.Row]:
        return await self._on_thread(lambda db: db.execute(sql, tuple(args)).fetchall())
