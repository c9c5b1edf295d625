"""The worktrees part of the store: which branch (and worktree folder) this bot made for a task,
at which commit, recorded once when it is made (rooms/work/worktrees.py)."""

from __future__ import annotations

from rooms.base.records import WorktreeRecord
from rooms.store.connection import StoreBase

_COLUMNS = "task_id, name, wanted, branch, base, repository, created_at"


class WorktreeStore(StoreBase):
    async def worktree(self, task_id: int) -> WorktreeRecord | None:
        rows = await self._rows(f"SELECT {_COLUMNS} FROM worktrees WHERE task_id=?", (task_id,))
        return WorktreeRecord(*rows[0]) if rows else None

    async def record_worktree(self, record: WorktreeRecord) -> None:
        """Record a task's new worktree; a task has one, made once (a second is an error)."""
        await self._write(
            f"INSERT INTO worktrees ({_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
            (
                record.task_id,
                record.name,
                record.wanted,
                record.branch,
                record.base,
                record.repository,
                record.created_at,
            ),
        )
