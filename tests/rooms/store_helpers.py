"""Shared pieces of the store tests: a fresh store per test, a task, an outbox draft."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rooms.base.model import RoomRef, Task
from rooms.base.records import OutboxDraft
from rooms.store import Store

ROOM = RoomRef("test", "C1", "T1")
NOW = 1_000.0


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(str(tmp_path / "t.db"))
    yield s
    await s.close()


async def new_task(store: Store, room: RoomRef = ROOM, text: str = "build it") -> Task:
    task = await store.open_task(room, "g", text, "alice", NOW)
    assert task is not None
    return task


def note(key: str, text: str = "hello") -> OutboxDraft:
    return OutboxDraft(key=key, room=ROOM, text=text)
