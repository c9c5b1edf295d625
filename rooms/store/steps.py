"""The store's side of one driver step, in as few round trips as a step needs (issue 28).

A turn of a task we drive costs two round trips to aiosqlite's thread: `begin_step` (the
guard, the lease renewed, the running turn, and the messages people wrote since the driver
last looked), then `apply_step` after the run (the turn's end, its usage, the transition, the
posts, together), which first checks that people wrote nothing and called no arbiter while
the turn ran: when they did, it writes nothing and returns what they did (`Stale`), and the
driver decides again with it (a third round trip, only then). A decision that acts outside
its change (the pair's wrap-up commits the approved tree) is made once, after `since_run` has
read what people did while the turn ran: three round trips for such a turn. The driver keeps
the history in memory meanwhile (rooms/core/kept_history.py), so nothing is read twice.
"""

from __future__ import annotations

import sqlite3

from rooms.base.machine import registered_table
from rooms.base.model import Summon, Task, Turn
from rooms.base.records import Change, Message
from rooms.store import history_rows
from rooms.store.apply import Stale, apply_change
from rooms.store.connection import StoreBase
from rooms.store.rows import Abort, insert_turn


class StepStore(StoreBase):
    async def begin_step(
        self,
        task: Task,
        role: str,
        owner: str,
        now: float,
        *,
        wall: float,
        lease_s: float,
        since_message: int,
        tree_before: str | None = None,
        resumed_from: str | None = None,
    ) -> tuple[Turn, list[Message], int] | None:
        """Insert the next turn as `running` if `owner` still holds the lease at wall time `wall`,
        the task is still at `task.version` and, when `task` has no pending `arbitrate`, none
        came meanwhile (it is taken before the next turn); the lease is renewed for `lease_s`.
        Returns the turn, the task's messages with an id above `since_message` and its `rounds`
        (a person's message resets them without moving the version); None when a guard failed
        (the driver reads the task again)."""
        summon_guard = " AND summon IS NULL" if task.summon is None else ""

        def insert(db: sqlite3.Connection) -> tuple[Turn, list[Message], int]:
            # The task's last message id comes with the guard: the messages themselves are read
            # only when there are new ones (rarely: people seldom write between two turns).
            guarded = db.execute(
                "UPDATE tasks SET turns = turns + 1,"
                " lease_until = CASE WHEN lease_until > ? THEN lease_until ELSE ? END"
                " WHERE id=? AND version=? AND lease_owner=? AND lease_until >= ?"
                + summon_guard
                + " RETURNING rounds, (SELECT MAX(m.id) FROM messages m WHERE m.task_id = ?)",
                (wall + lease_s, wall + lease_s, task.id, task.version, owner, wall, task.id),
            ).fetchone()
            if guarded is None:
                raise Abort
            turn = insert_turn(db, task, role, owner, now, tree_before, resumed_from)
            new = guarded[1] is not None and guarded[1] > since_message
            messages = history_rows.messages(db, task.id, since_message) if new else []
            return turn, messages, int(guarded[0])

        try:
            return await self._transact(insert)
        except (Abort, sqlite3.IntegrityError):
            return None

    async def since_run(
        self, task_id: int, since_message: int
    ) -> tuple[list[Message], Summon | None, bool]:
        """After a run whose decision must see everything before it is made (see the module's
        docstring): the messages with an id above `since_message`, the task's pending
        `arbitrate` (None: none), and whether the task still exists, in one round trip."""

        def read(db: sqlite3.Connection) -> tuple[list[Message], Summon | None, bool]:
            row = db.execute("SELECT summon FROM tasks WHERE id=?", (task_id,)).fetchone()
            messages = history_rows.messages(db, task_id, since_message)
            summon = Summon.model_validate_json(row[0]) if row is not None and row[0] else None
            return messages, summon, row is not None

        return await self._read(read)

    async def apply_step(self, change: Change) -> Task | Stale | None:
        """`Store.apply` for a step's decision, whose `seen_message` (and `seen_summon`) say
        what people had done when it was decided: the task after the change; or `Stale`, with
        what people did since (messages, the pending summon as it is now), when the decision
        missed something (nothing written: decide again); or None when a guard was lost."""
        try:
            return await self._transact(lambda db: apply_change(db, change, registered_table))
        except Stale as stale:
            return stale
        except Abort:
            return None
