"""The data folder and the database are the bot's alone (issue 24 #15), through open_app under
the usual umask: made 0700 / 0600, and tightened with a line in the log when found looser."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.app import open_app
from bot.settings import load_settings
from tests.fakes.platform import RecordingAdapter
from tests.fakes.runner import ScriptedRunner


@pytest.fixture
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


async def test_a_new_data_folder_is_0700_and_its_database_0600(
    tmp_path: Path, usual_umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "new" / "data"
    monkeypatch.setenv("TRIBUNAL_DATA", str(data))
    async with open_app(
        load_settings(env_file=None), RecordingAdapter("console"), runner=ScriptedRunner({})
    ):
        made = {p.name: mode(p) for p in data.iterdir() if p.name.startswith("tribunal.db")}
    assert mode(data) == 0o700
    assert made == {"tribunal.db": 0o600, "tribunal.db-wal": 0o600, "tribunal.db-shm": 0o600}
    # Only the data folder itself is the bot's: a parent it had to make is the user's.
    assert mode(tmp_path / "new") == 0o755


async def test_a_data_folder_open_to_others_is_tightened_and_the_log_says_so(
    tmp_path: Path,
    usual_umask: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # As an older Tribunal left it under umask 022: the folder 0755, the database 0644.
    data = tmp_path / "data"
    data.mkdir()
    sqlite3.connect(data / "tribunal.db").execute("CREATE TABLE t (x)").connection.close()
    assert (mode(data), mode(data / "tribunal.db")) == (0o755, 0o644)
    monkeypatch.setenv("TRIBUNAL_DATA", str(data))
    caplog.set_level(logging.WARNING)
    async with open_app(
        load_settings(env_file=None), RecordingAdapter("console"), runner=ScriptedRunner({})
    ):
        pass
    assert (mode(data), mode(data / "tribunal.db")) == (0o700, 0o600)
    said = " | ".join(r.getMessage() for r in caplog.records)
    assert f"the folder {data} was open to other users (mode 755): made it 700" in said
    assert f"{data / 'tribunal.db'} was open to other users (mode 644): made it 600" in said
