"""The progress part of the store: which chat message shows a turn's progress, kept until that
message has been edited to its final state (rooms/core/progress.py). A message still recorded
once its turn has ended (a crash, a stop, an edit the platform refused) is edited when the
engine next starts, so no progress message says "working" for ever."""

from __future__ import annotations

from dataclasses import dataclass

from rooms.base.model import RoomRef
from rooms.store.connection import StoreBase


@dataclass(frozen=True)
class OpenProgress:
    """A progress message whose turn has ended and which does not say so yet."""

    turn_id: int
    task_id: int
    seq: int
    role: str
    status: str  # the turn's: done, failed, interrupted
    message_id: str
    room: RoomRef
    protocol: str  # the task's


class ProgressStore(StoreBase):
    async def set_progress_message(self, turn_id: int, message_id: str | None) -> None:
        """Record the turn's progress message (None: it says how the turn ended now)."""
        await self._write("UPDATE turns SET progress_message=? WHERE id=?", (message_id, turn_id))

    async def open_progress(self, task_id: int | None = None) -> list[OpenProgress]:
        """The ended turns (of one task, or of all) whose progress message still needs its final
        edit, oldest first. Running turns are left: their engine, here or elsewhere, ends them."""
        where = "t.progress_message IS NOT NULL AND t.status != 'running'"
        args: tuple[int, ...] = ()
        if task_id is not None:
            where += " AND t.task_id=?"
            args = (task_id,)
        rows = await self._rows(
            "SELECT t.id, t.task_id, t.seq, t.role, t.status, t.progress_message, r.platform,"
            " r.channel, r.thread, k.protocol FROM turns t JOIN tasks k ON k.id = t.task_id"
            f" JOIN rooms r ON r.key = k.room WHERE {where} ORDER BY t.id",
            args,
        )
        return [
            OpenProgress(r[0], r[1], r[2], r[3], r[4], r[5], RoomRef(r[6], r[7], r[8]), r[9])
            for r in rows
        ]
