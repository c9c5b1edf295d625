"""The connection and transaction plumbing every part of the store shares.

aiosqlite runs every statement on one worker thread, and each call is a round trip to it: a
queue put, a thread switch and a future resolved on the event loop. That round trip, not SQLite,
is what a busy engine waits for. So a transaction (or a read of several tables) is one plain
function run on that thread in one round trip (`_transact`, `_read`), and a write that is a
single statement runs without BEGIN and COMMIT (`_write`): SQLite makes it atomic on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar, cast

import aiosqlite

T = TypeVar("T")


class StoreBase:
    """One aiosqlite connection shared by many coroutines, and the lock that keeps their
    statements out of each other's transactions."""

    def __init__(self, db: aiosqlite.Connection, path: str) -> None:
        self._db = db
        self.path = path
        self._lock = asyncio.Lock()

    async def close(self) -> None:
        async with self._lock:
            await self._db.close()

    async def _on_thread(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` with the sqlite3 connection on aiosqlite's worker thread (the only thread
        that may use it), as one round trip. Under the lock, so nothing of another coroutine
        runs in between; the worker runs one function at a time, in order, so a function whose
        caller was cancelled still runs to its end before anything queued after it."""
        run = cast(Callable[..., Awaitable[Any]], self._db._execute)  # aiosqlite's own queue
        async with self._lock:
            return cast(T, await run(fn, self._db._conn))

    async def _transact(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """One write transaction (BEGIN IMMEDIATE … COMMIT) around `fn`, in one round trip. Any
        exception in `fn` rolls it back and is raised here: all of it is written, or nothing."""

        def transaction(db: sqlite3.Connection) -> T:
            db.execute("BEGIN IMMEDIATE")  # when BEGIN fails (busy) there is nothing to undo
            try:
                result = fn(db)
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.OperationalError):
                    db.execute("ROLLBACK")
                raise
            return result

        return await self._on_thread(transaction)

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
