"""The protocol seam (DESIGN §9): a fourth protocol that only the tests know (tests/rooms/
relay_protocol.py), registered here, runs through the real engine, store and scripted runner
with no change to the driver or the store; the store checks every move against the task's own
table; state tables that cannot work are refused; old databases migrate."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from rooms.base.machine import IllegalTransition, StateTable, UnknownProtocol
from rooms.base.model import RoomRef
from rooms.base.records import Change
from rooms.base.words import CLOSED, STOP, WAITING_HUMAN
from rooms.core import registry as protocols
from rooms.core.registry import by_command, protocol_for, register
from rooms.pair import states as pair
from rooms.store import Store
from rooms.store.schema import LATEST, MIGRATIONS
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import fail
from tests.rooms.relay_protocol import LEFT_TURN, RELAY, RIGHT_TURN, TABLE

ROOM = RoomRef("test", "C1", "T1")
NOW = 1_000.0


@pytest.fixture
def relay() -> Iterator[None]:
    register(RELAY)
    yield
    protocols.unregister(RELAY.name)


async def test_a_fourth_protocol_runs_through_the_real_engine(tmp_path: Path, relay: None) -> None:
    script = {"left": ["one", "three"], "right": ["two", "STOP: that is enough"]}
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal relay count to four")
        await kit.settle()

        task = await kit.task()
        assert (task.protocol, task.status, task.text) == ("relay", CLOSED, "count to four")
        assert kit.roles() == ["left", "right", "left", "right"]
        turns = await kit.store.turns(task.id)
        assert [(t.role, t.status, t.output) for t in turns] == [
            ("left", "done", "one"),
            ("right", "done", "two"),
            ("left", "done", "three"),
            ("right", "done", "STOP: that is enough"),
        ]
        # Each actor read the others through the store, as the relay's own spec put it.
        last = kit.runner.calls[-1]
        assert "left: one\nright: two\nleft: three" in last.prompt
        assert last.spec.request.system_prompt == "take your turn; answer STOP to end"
        assert kit.platform.texts() == [
            "🔁 Relay opened by alice: left and right take turns until one says STOP.",
            "one",
            "two",
            "three",
            "STOP: that is enough",
        ]
        assert await kit.store.count_pending() == 0


async def test_a_person_reaches_the_relay_and_its_status_uses_its_labels(
    tmp_path: Path, relay: None
) -> None:
    async with engine_kit(tmp_path, {"left": ["ping"], "right": [fail("crashed", "boom")]}) as kit:
        await kit.say("@tribunal relay go")
        await kit.settle()
        task = await kit.task()
        assert task.status == WAITING_HUMAN  # the relay's own failure rule
        assert "the relay broke" in kit.platform.texts()[-1]

        kit.runner.add("left", "back again")
        kit.runner.add("right", "STOP")
        await kit.store.apply(Change(task.id, NOW, expect_version=task.version, event="answer"))
        kit.engine.ctx.spawn(task.id)
        await kit.settle()
        assert (await kit.task()).status == CLOSED
        assert kit.roles()[-2:] == ["left", "right"]

    (tmp_path / "two").mkdir()
    async with engine_kit(tmp_path / "two", {"left": [fail("crashed", "x")]}) as kit:
        await kit.say("@tribunal relay go")
        await kit.settle()
        await kit.say("@tribunal status")
        await kit.settle()
        # The relay's label (the pair's would read "waiting for a person").
        assert "Task #1: waiting_human" in kit.platform.texts()[-1]


async def test_without_the_command_word_a_task_is_the_pair(tmp_path: Path, relay: None) -> None:
    async with engine_kit(tmp_path, {"owner": ["DONE"] * 2, "reviewer": ["APPROVED"]}) as kit:
        await kit.say("@tribunal relayed messages are lost")
        await kit.settle()
        task = await kit.task()
        assert (task.protocol, task.status, task.text) == (
            "pair",
            CLOSED,
            "relayed messages are lost",
        )


async def test_the_store_checks_each_move_against_the_tasks_own_table(
    tmp_path: Path, relay: None
) -> None:
    store = await Store.open(str(tmp_path / "t.db"))
    try:
        task = await store.open_task(ROOM, "g", "go", "alice", NOW, protocol="relay")
        assert task is not None and (task.protocol, task.status) == ("relay", LEFT_TURN)
        with pytest.raises(IllegalTransition):  # a pair event means nothing to the relay
            await store.apply(Change(task.id, NOW, expect_version=0, event="DONE"))
        with pytest.raises(IllegalTransition):  # a target the table does not name for the move
            await store.apply(Change(task.id, NOW, expect_version=0, event="pass", status=CLOSED))
        moved = await store.apply(
            Change(task.id, NOW, expect_version=0, event="pass", status=RIGHT_TURN)
        )
        assert moved is not None and (moved.status, moved.version) == (RIGHT_TURN, 1)
        assert (await store.task(task.id)) == moved  # nothing of the refused moves was written

        paired = await store.open_task(RoomRef("test", "C1", "T2"), "g", "x", "bob", NOW)
        assert paired is not None and paired.protocol == "pair"
        with pytest.raises(IllegalTransition):  # and a relay event means nothing to the pair
            await store.apply(Change(paired.id, NOW, expect_version=0, event="pass"))
        with pytest.raises(UnknownProtocol):
            await store.open_task(RoomRef("test", "C1", "T3"), "g", "x", "bob", NOW, protocol="no")
        assert await store.open_task_in(RoomRef("test", "C1", "T3")) is None
    finally:
        await store.close()


def test_registering_keeps_names_and_command_words_unique(relay: None) -> None:
    assert protocol_for("relay") is RELAY and by_command("relay") is RELAY
    assert by_command("pair") is None and protocol_for("pair").table is pair.TABLE
    register(RELAY)  # the same object again is fine
    clash = type(RELAY)()
    with pytest.raises(ValueError, match="already registered"):
        register(clash)
    other = type("Other", (type(RELAY),), {"name": "other"})()
    with pytest.raises(ValueError, match="already opens with 'relay'"):
        register(other)
    with pytest.raises(UnknownProtocol):
        protocol_for("other")


@pytest.mark.parametrize("word", [*protocols.COMMANDS, "quit"])
def test_a_protocol_cannot_take_a_built_in_command_word(word: str) -> None:
    """`@tribunal status …` is the status command: a protocol opened by it would never open (and
    in the console it would hide the command). Refused at registration, and nothing is kept."""
    shadow = type("Shadow", (type(RELAY),), {"name": "shadow", "command": word})()
    with pytest.raises(ValueError, match=f"cannot open with '{word}': it is a built-in command"):
        register(shadow)
    with pytest.raises(UnknownProtocol):
        protocol_for("shadow")
    assert by_command(word) is None


@pytest.mark.parametrize("word", ["Relay2", "/relay2", "relay two", "relay2!", "", "r" * 33])
def test_a_command_word_that_could_never_be_typed_is_refused(word: str) -> None:
    odd = type("Odd", (type(RELAY),), {"name": "odd", "command": word})()
    with pytest.raises(ValueError, match="could never be typed"):
        register(odd)
    with pytest.raises(UnknownProtocol):
        protocol_for("odd")


_OK = {"a": {STOP: CLOSED, "go": "a"}, CLOSED: {}}


@pytest.mark.parametrize(
    ("transitions", "actors", "initial", "problem"),
    [
        (_OK, {"a": "x"}, "a", "different statuses"),
        ({"a": {STOP: CLOSED}}, {"a": "x"}, "a", "leads nowhere"),
        ({"a": {STOP: CLOSED}, CLOSED: {"go": "a"}}, {"a": "x", CLOSED: None}, "a", "nowhere"),
        (_OK, {"a": "x", CLOSED: None}, CLOSED, "must be an open status"),
        (_OK, {"a": "x", CLOSED: None}, "b", "must be an open status"),
        ({"a": {"go": "a"}, CLOSED: {}}, {"a": "x", CLOSED: None}, "a", "must close on 'stop'"),
        ({"a": {STOP: CLOSED, "go": "b"}, CLOSED: {}}, {"a": "x", CLOSED: None}, "a", "unknown"),
    ],
)
def test_a_state_table_that_cannot_work_is_refused(
    transitions: dict[str, dict[str, str]],
    actors: dict[str, str | None],
    initial: str,
    problem: str,
) -> None:
    with pytest.raises(ValueError, match=problem):
        StateTable("bad", initial, transitions, actors)


def test_every_pair_status_has_an_actor_entry_and_the_tables_agree() -> None:
    assert set(pair.STATUSES) == set(pair.TABLE.statuses) == set(pair.LABELS)
    assert TABLE.open_statuses == (LEFT_TURN, RIGHT_TURN, WAITING_HUMAN)


async def test_a_version_2_database_migrates_its_tasks_to_the_pair(tmp_path: Path) -> None:
    path = str(tmp_path / "v2.db")
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA foreign_keys=ON")
    for step in MIGRATIONS[:2]:
        for sql in step:
            raw.execute(sql)
    raw.execute("PRAGMA user_version=2")
    raw.execute("INSERT INTO groups VALUES ('g', 1)")
    raw.execute("INSERT INTO rooms VALUES ('test:C1:T1', 'test', 'C1', 'T1', 'g', 1)")
    raw.execute(
        "INSERT INTO tasks (room, group_name, text, opened_by, status, version, grants,"
        " created_at, updated_at) VALUES ('test:C1:T1', 'g', 'old work', 'al', 'review_turn',"
        " 4, 1, 1, 2)"
    )
    raw.execute(
        "INSERT INTO turns (task_id, seq, role, phase, status, started_at)"
        " VALUES (1, 1, 'owner', 'owner_turn', 'done', 1)"
    )
    with pytest.raises(sqlite3.IntegrityError):  # version 2 knew only the pair's statuses
        raw.execute("UPDATE tasks SET status='left_turn'")
    raw.commit()
    raw.close()

    store = await Store.open(path)
    try:
        assert await store.schema_version() == LATEST
        task = await store.task(1)
        assert task is not None
        assert (task.protocol, task.status, task.version, task.grants, task.opened_by) == (
            "pair",
            pair.REVIEW_TURN,
            4,
            1,
            "al",
        )
        assert [t.role for t in await store.turns(1)] == ["owner"]
        assert await store.open_task(ROOM, "g", "again", "bob", NOW) is None  # still one per room
    finally:
        await store.close()
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA foreign_keys=ON")
    assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    raw.execute("UPDATE tasks SET status='left_turn'")  # any protocol's status is storable now
    with pytest.raises(sqlite3.IntegrityError):  # references are still enforced
        raw.execute(
            "INSERT INTO turns (task_id, seq, role, phase, status, started_at)"
            " VALUES (99, 1, 'owner', 'owner_turn', 'done', 1)"
        )
    raw.close()


async def test_a_task_of_a_protocol_this_process_does_not_run_is_shown_and_left_alone(
    tmp_path: Path,
) -> None:
    register(RELAY)
    try:
        async with engine_kit(tmp_path, {}, start=False) as kit:
            await kit.store.open_task(ROOM, "g", "go", "alice", NOW, protocol="relay")
    finally:
        protocols.unregister(RELAY.name)
    async with engine_kit(tmp_path, {}) as kit:  # a process that knows only the pair
        await kit.settle()
        assert kit.runner.calls == []
        assert (await kit.task()).status == LEFT_TURN  # nothing was written
        assert (await kit.engine.status_text(ROOM)).startswith("Task #1: left_turn (relay)")
