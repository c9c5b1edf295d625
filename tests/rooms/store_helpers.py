"""Shared pieces of the store tests: a fresh store per test, a task, an outbox draft."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rooms.base.model import RoomRef, Task
from rooms.base.records import OutboxDraft
from rooms.store import Store
from tests.fakes.postgres import Server

ROOM = RoomRef("test", "C1", "T1")
NOW = 1_000.0


DATABASES = ["sqlite", "postgresql"]


def database(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store of `kind` opens: a file in tmp_path, or a fresh schema of the run's
    PostgreSQL (the `postgres` fixture of tests/conftest.py, started on first use)."""
    if kind == "sqlite":
        return str(tmp_path / "t.db")
    server: Server = request.getfixturevalue("postgres")
    return server.fresh_url()


@pytest.fixture(params=DATABASES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh store on each database: every test that takes it runs on both."""
    s = await Store.open(database(request.param, request, tmp_path))
    yield s
    await s.close()


async def new_task(store: Store, room: RoomRef = ROOM, text: str = "build it") -> Task:
    task = await store.open_task(room, "g", text, "alice", NOW)
    assert task is not None
    return task


def note(key: str, text: str = "hello") -> OutboxDraft:
    return OutboxDraft(key=key, room=ROOM, text=text)
