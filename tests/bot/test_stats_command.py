"""`tribunal stats`: the outcome ledger per group and overall, as a table and as JSON (the
dashboard's export), read from a store the real engine filled (two groups, three rulings)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest

from bot.cli import main
from tests.fakes.engine_kit import engine_kit
from tests.fakes.postgres import Server
from tests.rooms.test_outcome_ledger import POLICY, TASK, rule, script


async def _filled(tmp_path: Path) -> Path:
    db = tmp_path / "tribunal.db"
    borne = script([rule("PROCEED")], owner=["DONE\nwrapped"], reviewer=["APPROVED"])
    async with engine_kit(tmp_path, borne, policy=replace(POLICY, name="alpha"), db=str(db)) as kit:
        await kit.say(TASK)
        await kit.settle()
    # The next task in the room, in another group: not borne out, then overridden by a person.
    later = script(
        [rule("PROCEED"), rule("ESCALATE")],
        owner=["DONE\nsame parser"],
        reviewer=[FINDING_AGAIN, FINDING_AGAIN],
    )
    async with engine_kit(tmp_path, later, policy=replace(POLICY, name="beta"), db=str(db)) as kit:
        kit.events = 100  # new event ids: the store remembers the first engine's
        await kit.say(TASK)
        await kit.settle()
        await kit.say("stop after this one, I will take it from here", user="boss", mention=False)
        await kit.settle()
    return db


FINDING_AGAIN = "CHANGES_REQUESTED\n- F1: the parser drops the last line of the file"


def test_stats_prints_the_ledger_as_a_table_and_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = asyncio.run(_filled(tmp_path))  # the CLI runs its own event loop
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRIBUNAL_DB", str(db))
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    assert main(["stats"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["group", "rulings", "pending"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {"alpha", "beta", "(all"}
    assert rows["alpha"].split()[1:5] == ["1", "0", "1", "(100%)"]
    # beta: PROCEED not borne out, ESCALATE overridden.
    assert rows["beta"].split()[1:6] == ["2", "0", "0", "(0%)", "1"]
    assert "1 (50%)" in rows["beta"]
    assert rows["(all"].split()[2:6] == ["3", "0", "1", "(33%)"]  # "(all groups)"

    assert main(["stats", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    overall = data["overall"]
    assert (overall["rulings"], overall["settled"], overall["borne_out"]) == (3, 3, 1)
    assert overall["overridden"] == 1 and overall["override_rate"] == pytest.approx(1 / 3)
    assert [g["group"] for g in data["groups"]] == ["alpha", "beta"]

    assert main(["stats", "--json", "--group", "beta"]) == 0
    beta = json.loads(capsys.readouterr().out)
    assert beta["group"] == "beta" and beta["overall"]["rulings"] == 2


def test_stats_without_a_store_says_so_and_creates_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRIBUNAL_DB", str(tmp_path / "none.db"))
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    assert main(["stats"]) == 2
    assert "no store at" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()
    assert main(["stats", "--days", "-1"]) == 2


def test_stats_reads_a_postgresql_database(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    postgres: Server,
) -> None:
    # Before: stats read <data>/tribunal.db whatever TRIBUNAL_DB said ("no store" on PostgreSQL).
    url = postgres.fresh_url()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRIBUNAL_DB", url)
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    assert main(["stats"]) == 2  # an empty database: nothing ruled yet, and nothing created
    assert "no store at" in capsys.readouterr().err

    async def fill() -> None:
        s = script([rule("PROCEED")], owner=["DONE\nwrapped"], reviewer=["APPROVED"])
        async with engine_kit(tmp_path, s, policy=replace(POLICY, name="alpha"), db=url) as kit:
            await kit.say(TASK)
            await kit.settle()

    asyncio.run(fill())
    assert main(["stats", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [g["group"] for g in data["groups"]] == ["alpha"]
    assert data["overall"]["borne_out"] == 1
    assert not list(tmp_path.rglob("*.db"))
