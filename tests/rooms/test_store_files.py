"""The database's files are private (rooms/store/files.py, issue 24 #15): 0600 when the store
makes them, tightened with a line in the log when found looser, whatever the umask."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from rooms.store import Store
from tests.rooms.store_helpers import new_task


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The default umask of most systems: files 0644, folders 0755 unless asked otherwise."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def files_of(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


async def test_a_new_database_and_its_wal_and_shm_are_0600(
    tmp_path: Path, usual_umask: None
) -> None:
    db = tmp_path / "tribunal.db"
    store = await Store.open(str(db))
    try:
        await new_task(store)  # a write: the -wal and -shm files exist now
        assert {p.name: mode(p) for p in files_of(db)} == {p.name: 0o600 for p in files_of(db)}
    finally:
        await store.close()


async def test_a_database_open_to_others_is_tightened_and_the_log_says_so(
    tmp_path: Path, usual_umask: None, caplog: pytest.LogCaptureFixture
) -> None:
    # As an older Tribunal left it: made by SQLite under umask 022, 0644, with its -wal and -shm
    # (kept: a reader is still connected when the store opens it).
    db = tmp_path / "tribunal.db"
    older = sqlite3.connect(db)
    older.execute("PRAGMA journal_mode=WAL")
    older.execute("CREATE TABLE t (x)")
    older.execute("INSERT INTO t VALUES (1)")
    older.commit()
    assert {mode(p) for p in files_of(db)} == {0o644}
    caplog.set_level(logging.WARNING, logger="rooms.store.files")
    store = await Store.open(str(db))
    try:
        assert {p.name: mode(p) for p in files_of(db)} == {p.name: 0o600 for p in files_of(db)}
    finally:
        await store.close()
        older.close()
    said = [r.getMessage() for r in caplog.records]
    for path in files_of(db):
        assert f"{path} was open to other users (mode 644): made it 600" in " | ".join(said)
