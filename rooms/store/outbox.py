"""The outbox part of the store: enqueue, claim, mark sent or failed (DESIGN §7).

The deliverer's round (`outbox_round`) is one round trip: the rows its last round posted are
marked sent, and the oldest pending row of each room, when due and free, is claimed and read.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from typing import Any

from rooms.base.records import OutboxDraft, OutboxRow
from rooms.store.connection import StoreBase
from rooms.store.rows import Abort, enqueue, ensure_room, record_event, to_outbox


class OutboxStore(StoreBase):
    # -- outbox --------------------------------------------------------------------------------

    async def enqueue(
        self, drafts: list[OutboxDraft], now: float, *, group: str, event_id: str | None = None
    ) -> bool:
        """Enqueue replies that change nothing else (status, refusals). With `event_id` the event
        is recorded in the same transaction; False when it was handled before."""

        def insert(db: sqlite3.Connection) -> bool:
            if event_id and not record_event(db, event_id, now):
                raise Abort
            for draft in drafts:
                ensure_room(db, draft.room, group, now)
                enqueue(db, draft, None, now)
            return True

        try:
            return await self._transact(insert)
        except Abort:
            return False

    async def last_sent_before(self, room_key: str, outbox_id: int) -> str | None:
        """What the room's newest delivered row before `outbox_id` came out as (its platform
        message id), if any is still kept."""
        rows = await self._rows(
            "SELECT message_id FROM outbox WHERE room=? AND id<? AND status='sent'"
            " AND message_id IS NOT NULL ORDER BY id DESC LIMIT 1",
            (room_key, outbox_id),
        )
        return str(rows[0][0]) if rows else None

    async def pending_outbox(
        self, limit: int = 200, *, platforms: frozenset[str] | None = None
    ) -> list[OutboxRow]:
        """Pending rows in id order, due or not, claimed or not: the deliverer keeps each room's
        order, so a row that must wait holds back the rows after it in its room. `platforms`:
        only the rooms of those platforms (a process delivers only what it serves)."""
        where, args = _of_platforms(platforms)
        rows = await self._rows(
            "SELECT o.*, r.platform, r.channel, r.thread FROM outbox o"
            f" JOIN rooms r ON r.key = o.room WHERE o.status='pending'{where}"
            " ORDER BY o.id LIMIT ?",
            (*args, limit),
        )
        return [to_outbox(r) for r in rows]

    async def next_outbox_per_room(
        self, limit: int = 500, *, platforms: frozenset[str] | None = None
    ) -> list[OutboxRow]:
        """The oldest pending row of each room (due or not, claimed or not), rooms in the order
        of those rows: what the deliverer may post next, so that a room whose rows keep failing
        holds back only itself, however many rows it has queued. `platforms`: only the rooms of
        those platforms (a process delivers only what it serves)."""
        where, args = _of_platforms(platforms)
        rows = await self._rows(
            "SELECT o.*, r.platform, r.channel, r.thread FROM outbox o"
            " JOIN rooms r ON r.key = o.room WHERE o.id IN"
            " (SELECT MIN(id) FROM outbox WHERE status='pending' GROUP BY room)"
            f"{where} ORDER BY o.id LIMIT ?",
            (*args, limit),
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

    async def sent_message_id(self, key: str) -> str | None:
        """The platform's id of the outbox row with this key, once it was sent (else None)."""
        rows = await self._rows(
            "SELECT message_id FROM outbox WHERE key=? AND status='sent'", (key,)
        )
        return str(rows[0][0]) if rows and rows[0][0] is not None else None

    async def count_pending(self, *, platforms: frozenset[str] | None = None) -> int:
        where, args = _of_platforms(platforms)
        rows = await self._rows(
            "SELECT COUNT(*) FROM outbox o JOIN rooms r ON r.key = o.room"
            f" WHERE o.status='pending'{where}",
            args,
        )
        return int(rows[0][0])

    async def outbox_round(
        self,
        owner: str,
        now: float,
        lease_s: float,
        *,
        sent: Sequence[tuple[int, str | None, float]] = (),
        platforms: frozenset[str] | None = None,
        limit: int = 32,
    ) -> tuple[list[OutboxRow], float | None]:
        """One round trip: mark `sent` ((row id, platform message id, when)) sent, then claim
        for `owner` the oldest pending row of each room (rooms in the order of those rows) when
        it is due at `now` and not claimed by another deliverer, at most `limit` of them (each
        is posted before the claim's `lease_s` ends). The claim is one statement (atomic on its
        own), so a round that only looks takes no write lock. Returns the claimed rows,
        `attempts` as before this claim, and when the first head row not yet due is due (None:
        none is waiting)."""
        where, args = _of_platforms(platforms)

        def run(db: sqlite3.Connection) -> tuple[list[OutboxRow], float | None]:
            if sent:
                _mark_sent(db, sent)
            heads = db.execute(
                "SELECT o.*, r.platform, r.channel, r.thread FROM outbox o"
                " JOIN rooms r ON r.key = o.room WHERE o.id IN"
                " (SELECT MIN(id) FROM outbox WHERE status='pending' GROUP BY room)"
                f"{where} ORDER BY o.id LIMIT 500",
                args,
            ).fetchall()
            due = [h for h in heads if h["next_try_at"] <= now][:limit]
            later = min((h["next_try_at"] for h in heads if h["next_try_at"] > now), default=None)
            if not due:
                return [], later
            taken = {
                r[0]
                for r in db.execute(
                    "UPDATE outbox SET claimed_by=?, claimed_until=?, attempts = attempts + 1"
                    " WHERE id IN (SELECT id FROM outbox"
                    f" WHERE id IN ({','.join('?' * len(due))}) AND {_FREE}) RETURNING id",
                    (owner, now + lease_s, *(h["id"] for h in due), owner, now),
                ).fetchall()
            }
            return [to_outbox(h) for h in due if h["id"] in taken], later

        return await self._on_thread(run)

    async def mark_sent_all(self, sent: Sequence[tuple[int, str | None, float]]) -> None:
        """`mark_sent` for several rows ((row id, platform message id, when)), one round trip."""
        await self._on_thread(lambda db: _mark_sent(db, sent))

    async def claim_outbox(self, row_id: int, owner: str, now: float, lease_s: float) -> bool:
        """Take one pending row for delivery so that two deliverers do not post it both."""
        claimed = await self._write_count(
            "UPDATE outbox SET claimed_by=?, claimed_until=?, attempts = attempts + 1"
            f" WHERE id IN (SELECT id FROM outbox WHERE id=? AND {_FREE})",
            (owner, now + lease_s, row_id, owner, now),
        )
        return claimed == 1

    async def mark_sent(self, row_id: int, message_id: str | None, now: float) -> None:
        await self._write_count(_MARK_SENT, (message_id, now, row_id))

    async def mark_failed(
        self, row_id: int, error: str, retry_at: float, *, give_up: bool = False
    ) -> None:
        """Record a failed attempt; the row stays pending until `retry_at` (or is dead)."""
        await self._write_count(
            "UPDATE outbox SET last_error=?, next_try_at=?, claimed_by=NULL,"
            " claimed_until=NULL, status=CASE WHEN ?=1 THEN 'dead' ELSE status END WHERE id=?",
            (error[:2000], retry_at, give_up, row_id),
        )


# A pending row no other deliverer holds (or whose claim ended), two placeholders: the owner
# and now. On PostgreSQL the rows are locked as they are picked (FOR UPDATE SKIP LOCKED, see
# postgres.py): a row another process is claiming at this moment is passed over, not waited on
# (and two claims locking rows in other orders cannot deadlock). SQLite's one writer needs none.
_FREE = (
    "status='pending' AND (claimed_by IS NULL OR claimed_by=? OR claimed_until < ?) /*skip-locked*/"
)

_MARK_SENT = (
    "UPDATE outbox SET status='sent', message_id=?, sent_at=?, claimed_by=NULL,"
    " claimed_until=NULL, last_error=NULL WHERE id=?"
)


def _mark_sent(db: sqlite3.Connection, sent: Sequence[tuple[int, str | None, float]]) -> None:
    """Mark rows sent: one statement for one row, else one transaction."""
    values = [(message, at, row) for row, message, at in sent]
    if len(values) == 1:
        db.execute(_MARK_SENT, values[0])
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        db.executemany(_MARK_SENT, values)
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.OperationalError):
            db.execute("ROLLBACK")
        raise


def _of_platforms(platforms: frozenset[str] | None) -> tuple[str, tuple[str, ...]]:
    """A SQL condition on `r.platform` (placeholders only) and its arguments; none for None."""
    if platforms is None:
        return "", ()
    names = tuple(sorted(platforms))
    if not names:
        return " AND 1=0", ()
    return f" AND r.platform IN ({','.join('?' * len(names))})", names
