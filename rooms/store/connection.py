"""The connection and transaction plumbing every part of the store shares."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import aiosqlite


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
