"""The store on PostgreSQL: a psycopg connection that speaks the sqlite3 interface the store's
functions are written against (connection.py), so the store's logic exists once.

What differs between the two databases is translated here, once per distinct statement (cached):
- placeholders: `?` and `:name` become psycopg's `%s` and `%(name)s` (a literal `%` is doubled);
- the store's transactions (`_transact`, connection.py) are REPEATABLE READ: each reads one
  snapshot, and one that changes a row a concurrent transaction changed is given up by
  PostgreSQL and run again whole (connection.Retry). Every composite write of a task changes the
  task's row (the compare-and-swap on its version, the lease, the turn counter) or the turn's,
  so two of one task behave as if one ran after the other, as under SQLite's one writer. Not
  SERIALIZABLE: on tables this small its predicate locks cover whole tables, and in the
  benchmark (tests/bench/bench_fleet.py) a third of the transactions were given up and re-run
  for writes to other tasks' rows. What snapshot isolation leaves possible: two tasks opened at
  the same moment in one group may both pass its open-task cap. A store function that opens a
  transaction of its own (`BEGIN IMMEDIATE`: marking a batch of posts sent, writes by id that
  read nothing) gets READ COMMITTED and is never given up;
- `/*skip-locked*/` becomes `FOR UPDATE SKIP LOCKED` (a comment to SQLite, whose one writer
  never waits on a row): a claim passes over rows another process is claiming right now;
- Python booleans are sent as 0/1 (the columns are INTEGER, as SQLite stores them);
- psycopg's errors become sqlite3's classes (an integrity error is one on both), and a
  serialization failure or deadlock becomes `Retry`;
- NUMERIC results (SUM of integers) come back as int or float, never Decimal.

The driver is psycopg 3, synchronous, on worker threads of our own (a few connections, one
thread each: PostgresBackend): the store's functions are synchronous (they run on aiosqlite's
thread for SQLite), and a whole transaction is one hop to a thread however many statements it
has. An async driver (asyncpg) would need a second, async
copy of every function of the store. LISTEN/NOTIFY, which has no sqlite3 counterpart, uses
psycopg's async connection (listen.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import psycopg
import psycopg.errors
from psycopg.adapt import Loader

T = TypeVar("T")

SCHEMES = ("postgresql://", "postgres://")


def is_postgres(target: str) -> bool:
    """Whether TRIBUNAL_DB names a PostgreSQL database (a URL) rather than a SQLite file."""
    return target.startswith(SCHEMES)


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


# -- the SQL --------------------------------------------------------------------------------

_LITERAL = re.compile(r"('(?:[^']|'')*'|\"[^\"]*\")")  # quoted strings and identifiers
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@functools.lru_cache(maxsize=1024)
def translate(sql: str, named: bool) -> str:
    """A statement of the store in psycopg's spelling (see the module's docstring)."""
    if sql.strip().upper() == "BEGIN IMMEDIATE":
        return "BEGIN"  # a transaction of a store function's own: see the module's docstring
    # psycopg reads every `%` as a placeholder's start, inside quotes too ('sent back: %').
    parts = _LITERAL.split(sql.replace("%", "%%"))
    for i in range(0, len(parts), 2):  # outside quotes only
        part = parts[i]
        part = _NAMED.sub(r"%(\1)s", part) if named else part.replace("?", "%s")
        parts[i] = part.replace("/*skip-locked*/", "FOR UPDATE SKIP LOCKED")
    return "".join(parts)


def _value(v: Any) -> Any:
    return int(v) if isinstance(v, bool) else v


def _args(args: Any) -> Any:
    if isinstance(args, Mapping):
        return {k: _value(v) for k, v in args.items()}
    return tuple(_value(v) for v in args)


# -- rows and errors ----------------------------------------------------------------------------


class Row(tuple[Any, ...]):
    """A result row read by position or by column name, like sqlite3.Row."""

    _index: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    index = {d.name: i for i, d in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> Row:
        row = Row(values)
        row._index = index
        return row

    return make


class _Number(Loader):
    """NUMERIC (what SUM of integers gives) as int or float: the store's callers do arithmetic
    with floats and compare with ints, as they get them from SQLite."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        return float(text) if any(c in text for c in ".eEnN") else int(text)


class IntegrityError(sqlite3.IntegrityError):
    """A constraint refused the write (as sqlite3.IntegrityError for the store's callers)."""


class OperationalError(sqlite3.OperationalError):
    """Any other failure of PostgreSQL (as sqlite3.OperationalError for the store's callers)."""


def _translated(exc: psycopg.Error) -> sqlite3.Error:
    from rooms.store.connection import Retry

    if isinstance(exc, psycopg.errors.SerializationFailure | psycopg.errors.DeadlockDetected):
        return Retry(str(exc))
    if isinstance(exc, psycopg.IntegrityError):
        return IntegrityError(str(exc))
    return OperationalError(str(exc))


class Cursor:
    """The results of one statement, as the store reads them from sqlite3's cursor."""

    def __init__(self, cursor: psycopg.Cursor[Row]) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def fetchone(self) -> Row | None:
        return self._cursor.fetchone() if self._cursor.description else None

    def fetchall(self) -> list[Row]:
        return self._cursor.fetchall() if self._cursor.description else []

    def __iter__(self) -> Iterator[Row]:
        """`for row in db.execute(...)`, as on a sqlite3 cursor (the dashboard's reads do so)."""
        return iter(self.fetchall())


class _Done:
    """The cursor of `executemany`: how many rows it changed, no rows to read."""

    def __init__(self, rowcount: int) -> None:
        self.rowcount = rowcount

    def fetchone(self) -> None:
        return None

    def fetchall(self) -> list[Row]:
        return []


class Connection:
    """The subset of sqlite3.Connection the store uses, on a psycopg connection in autocommit
    mode (the store says BEGIN and COMMIT itself, as on SQLite)."""

    def __init__(self, conn: psycopg.Connection[Row], url: str) -> None:
        self.conn = conn
        self.url = url

    def reconnect_if_lost(self) -> None:
        """On the connection's thread, before a call: a connection the server dropped (it
        restarted, a failover, an idle timeout) is replaced. The call that met the loss failed
        (a transaction cut short may or may not have committed: it is not run again blindly);
        the next one gets a fresh connection."""
        if self.conn.closed or self.conn.broken:
            self.conn = _open(self.url)

    def execute(self, sql: str, args: Any = ()) -> Cursor:
        named = isinstance(args, Mapping)
        try:
            cursor = self.conn.execute(
                cast(Any, translate(sql, named)), _args(args) if args else None
            )
        except psycopg.Error as exc:
            raise _translated(exc) from exc
        return Cursor(cursor)

    def executemany(self, sql: str, rows: Iterable[Any]) -> Cursor | _Done:
        """One statement per row, in order. Not psycopg's executemany: it pipelines, and a
        pipeline that a serialization failure aborts reports a PipelineAborted error instead
        of the failure that must make the transaction run again."""
        count = 0
        for row in rows:
            count += max(self.execute(sql, row).rowcount, 0)
        return _Done(count)

    def close(self) -> None:
        self.conn.close()


def _open(url: str) -> psycopg.Connection[Row]:
    conn = psycopg.connect(url, autocommit=True, row_factory=_row_factory)
    conn.adapters.register_loader("numeric", _Number)
    return conn


def connect(url: str) -> Connection:
    return Connection(_open(url), url)


POOL_SIZE = 4  # connections (and threads) per store: transactions of several tasks at once


class PostgresBackend:
    """A few psycopg connections, each used by one thread of its own. A call takes a free one;
    unlike SQLite's one writer, PostgreSQL runs the transactions of several tasks at once."""

    dialect = "postgresql"
    serial = False  # no store-wide lock: each call has a connection to itself
    begin = "BEGIN ISOLATION LEVEL REPEATABLE READ"  # see the module's docstring
    begin_plain = "BEGIN"

    def __init__(self, conns: list[Connection], threads: list[ThreadPoolExecutor]) -> None:
        self.conns = conns
        self._threads = threads
        self._free: asyncio.Queue[int] = asyncio.Queue()
        for index in range(len(conns)):
            self._free.put_nowait(index)

    @property
    def conn(self) -> Connection:
        return self.conns[0]

    @classmethod
    async def open(cls, url: str, size: int = POOL_SIZE) -> PostgresBackend:
        loop = asyncio.get_running_loop()
        conns: list[Connection] = []
        threads: list[ThreadPoolExecutor] = []
        try:
            for _ in range(size):
                thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tribunal-pg")
                threads.append(thread)
                conns.append(await loop.run_in_executor(thread, connect, url))
        except psycopg.Error as exc:
            for conn, thread in zip(conns, threads, strict=False):
                await loop.run_in_executor(thread, conn.close)
            for thread in threads:
                thread.shutdown(wait=False)
            raise OperationalError(f"cannot connect to {redact(url)}: {exc}") from exc
        return cls(conns, threads)

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        index = await self._free.get()
        conn = self.conns[index]
        db = cast(sqlite3.Connection, conn)  # the sqlite3 subset, see Connection

        def run() -> T:
            try:
                conn.reconnect_if_lost()
            except psycopg.Error as exc:
                raise OperationalError(f"cannot reconnect to {redact(conn.url)}: {exc}") from exc
            return fn(db)

        running = asyncio.get_running_loop().run_in_executor(self._threads[index], run)
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            # The function runs to its end on its thread: wait for it, so that what the
            # cancelled caller does next (a finally that records the cancellation) comes after
            # it, as on SQLite's one worker thread, and its connection is free again.
            while not running.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait([running])
            raise
        finally:
            self._free.put_nowait(index)

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        for _ in self.conns:  # every call has given its connection back
            await self._free.get()
        for conn, thread in zip(self.conns, self._threads, strict=True):
            await loop.run_in_executor(thread, conn.close)
            thread.shutdown(wait=True)
