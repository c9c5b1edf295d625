"""Wake-ups on PostgreSQL: LISTEN/NOTIFY instead of polling (polling stays as the safety net).

Triggers (installed at open, idempotently, after the migrations: they are PostgreSQL's only and
not part of the numbered schema) notify the channel `tribunal` when another process may have
work for us, and PostgreSQL delivers a notification only once its transaction committed:
- `task:<id>:<room key>:<lease owner>:<lease until>`: a task was opened, changed status or
  version, was released by its engine, or got a human message (owner and until are '' when
  nobody holds it);
- `outbox:<lease owner>:<room key>`: a post was enqueued, for a task that engine drives ('':
  for a task nobody drives, or for no task). The engine that drives a task delivers its posts
  (it woke its own deliverer), so only a post of nobody's task wakes every deliverer.

`notifications(url)` yields those payloads for as long as it is iterated, on a connection of
its own (psycopg's async one: LISTEN has no counterpart in the sqlite3 interface the rest of the
store is written against). When the connection is lost it connects again and yields RESYNC: the
notifications sent meanwhile are lost, so the listener looks at everything once.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass

import psycopg

log = logging.getLogger(__name__)

CHANNEL = "tribunal"
RESYNC = "resync"  # connected (again): look at everything, a notification may have been missed

_NOTIFY = [
    f"""CREATE OR REPLACE FUNCTION tribunal_notify_task() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('{CHANNEL}', 'task:' || NEW.id || ':' || NEW.room || ':'
            || COALESCE(NEW.lease_owner, '') || ':' || COALESCE(NEW.lease_until::text, ''));
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION tribunal_notify_message() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE t record;
    BEGIN
        SELECT id, room, lease_owner, lease_until INTO t FROM tasks WHERE id = NEW.task_id;
        PERFORM pg_notify('{CHANNEL}', 'task:' || t.id || ':' || t.room || ':'
            || COALESCE(t.lease_owner, '') || ':' || COALESCE(t.lease_until::text, ''));
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION tribunal_notify_outbox() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE owner text;
    BEGIN
        SELECT lease_owner INTO owner FROM tasks WHERE id = NEW.task_id;
        PERFORM pg_notify('{CHANNEL}', 'outbox:' || COALESCE(owner, '') || ':' || NEW.room);
        RETURN NULL;
    END $$""",
    """CREATE OR REPLACE TRIGGER tribunal_task_opened AFTER INSERT ON tasks
    FOR EACH ROW EXECUTE FUNCTION tribunal_notify_task()""",
    # Not on a lease claimed or renewed (every few seconds per task): on what may give another
    # engine something to do.
    """CREATE OR REPLACE TRIGGER tribunal_task_changed AFTER UPDATE ON tasks
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status
        OR OLD.version IS DISTINCT FROM NEW.version
        OR OLD.summon IS DISTINCT FROM NEW.summon
        OR (NEW.lease_owner IS NULL AND OLD.lease_owner IS NOT NULL))
    EXECUTE FUNCTION tribunal_notify_task()""",
    """CREATE OR REPLACE TRIGGER tribunal_message AFTER INSERT ON messages
    FOR EACH ROW EXECUTE FUNCTION tribunal_notify_message()""",
    """CREATE OR REPLACE TRIGGER tribunal_outbox AFTER INSERT ON outbox
    FOR EACH ROW EXECUTE FUNCTION tribunal_notify_outbox()""",
]
# The same lock as the migrations (migrate.py): processes starting at once take turns.
_LOCK = "SELECT pg_advisory_xact_lock(7419001)"


def install_notify(db: sqlite3.Connection) -> None:
    """Inside a transaction on PostgreSQL: (re)create the triggers (idempotent)."""
    db.execute(_LOCK)
    for sql in _NOTIFY:
        db.execute(sql)


async def notifications(url: str, *, retry_s: float = 1.0) -> AsyncIterator[str]:
    """The payloads notified on CHANNEL, RESYNC first and after each reconnection; forever."""
    while True:
        try:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                await conn.execute(f"LISTEN {CHANNEL}")
                yield RESYNC
                async for note in conn.notifies():
                    yield note.payload
        except psycopg.Error as exc:
            log.warning("listening for wake-ups failed (%s); again in %.0fs", exc, retry_s)
        await asyncio.sleep(retry_s)


async def listens(url: str, timeout_s: float = 5.0) -> None:
    """Check that a notification sent on the database comes back to a listener (doctor):
    raises when it does not within `timeout_s`."""
    async with asyncio.timeout(timeout_s):
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("LISTEN tribunal_doctor")
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as other:
                await other.execute("NOTIFY tribunal_doctor, 'ping'")
            async for note in conn.notifies():
                if note.payload == "ping":
                    return


@dataclass(frozen=True)
class Wake:
    """One notification, read: what it is about (`kind` "task", "outbox" or RESYNC), and for a
    task its id and the engine holding its lease ('' for none)."""

    kind: str
    room: str = ""
    task_id: int = 0
    lease_owner: str = ""
    lease_until: float | None = None


def parse(payload: str) -> Wake | None:
    """A payload of the triggers above (a room key has colons of its own); None: not ours."""
    if payload == RESYNC:
        return Wake(RESYNC)
    kind, _, rest = payload.partition(":")
    if kind == "outbox":
        owner, _, room = rest.partition(":")
        return Wake("outbox", room=room, lease_owner=owner) if room else None
    if kind == "task":
        number, _, rest = rest.partition(":")
        parts = rest.rsplit(":", 2)  # the room key's own colons stay in it
        if not number.isdigit() or len(parts) != 3 or not parts[0]:
            return None
        room, owner, until = parts
        try:
            lease_until = float(until) if until else None
        except ValueError:
            return None
        return Wake("task", room, int(number), owner, lease_until)
    return None
