"""`tribunal migrate [--check]` (bot/migrate_command.py) and doctor's database line on
PostgreSQL (bot/doctor/database.py), against a database one step behind the code, one ahead, and
one up to date; both databases where the command applies to both."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.cli import EXIT_CONFIG, main
from bot.doctor.config import check_database
from bot.settings import load_settings
from rooms.store import Store, migrate
from rooms.store.schema import LATEST, MIGRATIONS
from tests.fakes.postgres import Server
from tests.rooms.store_helpers import DATABASES, database


async def _at(where: str, steps: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as code:
        code.setattr(migrate, "MIGRATIONS", steps)
        store = await Store.open(where)
        await store.close()


@pytest.mark.parametrize("kind", DATABASES)
def test_migrate_brings_a_database_one_step_behind_up_to_date(
    kind: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    where = database(kind, request, tmp_path)
    asyncio.run(_at(where, MIGRATIONS[:-1], monkeypatch))
    monkeypatch.setenv("TRIBUNAL_DB", where)
    assert main(["migrate", "--check"]) == 1
    assert f"schema {LATEST - 1}, this Tribunal's is {LATEST}" in capsys.readouterr().out
    assert asyncio.run(Store.schema_of(where)) == LATEST - 1  # --check changed nothing
    assert main(["migrate"]) == 0
    out = capsys.readouterr().out
    assert f"migrated from schema {LATEST - 1} to {LATEST}" in out
    assert "@" not in out or "***" in out  # a URL's password never shows
    assert asyncio.run(Store.schema_of(where)) == LATEST
    assert main(["migrate", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


@pytest.mark.parametrize("kind", DATABASES)
def test_migrate_refuses_a_database_ahead_of_the_code(
    kind: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    where = database(kind, request, tmp_path)
    asyncio.run(_at(where, [*MIGRATIONS, ["CREATE TABLE later (x INTEGER)"]], monkeypatch))
    monkeypatch.setenv("TRIBUNAL_DB", where)
    for command in (["migrate"], ["migrate", "--check"]):
        assert main(command) == 1
        assert "newer than this Tribunal" in capsys.readouterr().err
    assert asyncio.run(Store.schema_of(where)) == LATEST + 1


def test_doctor_checks_postgres_schema_and_listen(
    postgres: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres.fresh_url()
    monkeypatch.setenv("TRIBUNAL_DB", url)
    check = check_database(load_settings(None))
    assert check.ok and "schema 0 of" in check.text and "LISTEN/NOTIFY works" in check.text
    assert main(["migrate"]) == 0
    check = check_database(load_settings(None))
    assert check.ok and f"schema {LATEST}, LISTEN/NOTIFY works" in check.text


def test_doctor_says_an_unreachable_postgres_fails_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "TRIBUNAL_DB", f"postgresql://bot:s3cret@/tribunal?host={tmp_path}&connect_timeout=2"
    )
    check = check_database(load_settings(None))
    assert not check.ok
    assert "does not answer" in check.text and "s3cret" not in check.text


@pytest.mark.parametrize("kind", DATABASES)
def test_serve_refuses_to_start_on_a_database_ahead_of_the_code(
    kind: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    where = database(kind, request, tmp_path)
    asyncio.run(_at(where, [*MIGRATIONS, ["CREATE TABLE later (x INTEGER)"]], monkeypatch))
    monkeypatch.setenv("TRIBUNAL_DB", where)
    monkeypatch.setenv("TRIBUNAL_BACKEND", "local")
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    assert main(["serve"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"schema version {LATEST + 1}, newer than this Tribunal" in err
    assert "Traceback" not in err and "s3cret" not in err
    assert asyncio.run(Store.schema_of(where)) == LATEST + 1
