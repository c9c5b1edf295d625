"""The store: migrations, compare-and-swap, composite changes, turns, verdicts, escalations.
(Events, outbox and leases: test_store_delivery.py.)"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from rooms.base.machine import IllegalTransition
from rooms.base.model import Action, Firing, RoomRef, Ruling, Task, Turn
from rooms.base.records import (
    AnswerDraft,
    Change,
    EscalationDraft,
    FiringDraft,
    MessageDraft,
    OutboxDraft,
    TurnEnd,
    Usage,
    VerdictDraft,
)
from rooms.store import Store, StoreError
from rooms.store.schema import LATEST
from tests.rooms.store_helpers import DATABASES, NOW, ROOM, database, new_task, note, store

__all__ = ["store"]  # the fixture, imported for pytest

# -- migrations -------------------------------------------------------------------------------


async def test_migrations_on_a_fresh_file_and_on_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "fresh.db")
    store = await Store.open(path)
    assert await store.schema_version() == LATEST
    task = await new_task(store)
    await store.close()

    raw = sqlite3.connect(path)
    tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    journal = raw.execute("PRAGMA journal_mode").fetchone()[0]
    raw.close()
    assert {
        "groups",
        "rooms",
        "tasks",
        "turns",
        "messages",
        "verdicts",
        "references",
        "escalations",
        "events",
        "outbox",
        "usage",
        "firings",
    } <= tables
    assert journal == "wal"

    again = await Store.open(path)  # re-open: nothing re-applied, data kept
    assert await again.schema_version() == LATEST
    assert await again.task(task.id) == task
    await again.close()


async def test_stores_opening_one_fresh_file_at_once(tmp_path: Path) -> None:
    """Several processes starting on a fresh file: the WAL switch and the migrations race.
    Repeated, because the race is narrow (it failed about 1 in 10 before the WAL retry)."""
    for attempt in range(25):
        path = str(tmp_path / f"race{attempt}.db")
        stores = await asyncio.gather(*(Store.open(path) for _ in range(4)))
        assert {await s.schema_version() for s in stores} == {LATEST}
        for opened in stores:
            await opened.close()


async def test_a_file_that_is_not_a_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    with pytest.raises(StoreError, match="cannot use .* as the Tribunal database"):
        await Store.open(str(path))
    assert path.read_bytes() == b"these are my notes, not a database\n" * 200


async def test_a_database_from_a_newer_tribunal_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "newer.db")
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version={LATEST + 5}")
    raw.close()
    with pytest.raises(StoreError, match="newer than this Tribunal"):
        await Store.open(path)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == LATEST + 5
    raw.close()


# -- tasks and compare-and-swap --------------------------------------------------------------


async def test_one_open_task_per_room(store: Store) -> None:
    task = await new_task(store)
    assert await store.open_task(ROOM, "g", "another", "bob", NOW) is None
    other = await store.open_task(RoomRef("test", "C1", "T2"), "g", "elsewhere", "bob", NOW)
    assert other is not None
    closed = await store.apply(Change(task.id, NOW, expect_version=task.version, event="stop"))
    assert closed is not None and closed.status == "closed"
    assert await store.open_task(ROOM, "g", "next one", "bob", NOW) is not None


async def test_transition_bumps_version_and_enqueues_atomically(store: Store) -> None:
    task = await new_task(store)
    moved = await store.apply(
        Change(task.id, NOW + 1, expect_version=task.version, event="DONE", outbox=[note("k1")])
    )
    assert moved is not None
    assert (moved.status, moved.version, moved.updated_at) == ("review_turn", 1, NOW + 1)
    assert [r.key for r in await store.outbox()] == ["k1"]


async def test_a_stale_version_loses_and_changes_nothing(store: Store) -> None:
    task = await new_task(store)
    assert await store.apply(Change(task.id, NOW, expect_version=0, event="DONE")) is not None
    turn = await begin(store, await store.task(task.id))
    stale = Change(
        task.id,
        NOW,
        expect_version=0,  # the task is at version 1 now
        event="APPROVED",
        turn=TurnEnd(turn.id, "done", NOW, output="APPROVED", usage=Usage(5, 5, 0.1)),
        firing=FiringDraft(Firing(detector="stagnation", reason="r"), turn.id),
        message=MessageDraft("bob", "hi"),
        outbox=[note("stale")],
        rounds="inc",
        count_arbitration=True,
    )
    before = await snapshot(store, task.id)
    assert await store.apply(stale) is None
    assert await snapshot(store, task.id) == before


@pytest.mark.parametrize("kind", DATABASES)
async def test_concurrent_compare_and_swap_has_exactly_one_winner(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    path = database(kind, request, tmp_path)
    a, b = await Store.open(path), await Store.open(path)
    task = await new_task(a)
    changes = [
        store.apply(Change(task.id, NOW, expect_version=0, event=event, outbox=[note(event)]))
        for store in (a, b)
        for event in ("DONE", "BLOCKED", "stop")
    ]
    results = await asyncio.gather(*changes)
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    final = await b.task(task.id)
    assert final is not None and final.version == 1
    assert len(await a.outbox()) == 1  # only the winner's message was enqueued
    await a.close()
    await b.close()


async def test_an_illegal_transition_raises_and_rolls_back(store: Store) -> None:
    task = await new_task(store)
    before = await snapshot(store, task.id)
    with pytest.raises(IllegalTransition):
        await store.apply(
            Change(task.id, NOW, expect_version=0, event="APPROVED", outbox=[note("x")])
        )
    assert await snapshot(store, task.id) == before


async def test_a_status_change_without_a_version_guard_is_refused(store: Store) -> None:
    task = await new_task(store)
    with pytest.raises(ValueError, match="compare-and-swap"):
        await store.apply(Change(task.id, NOW, event="DONE"))


async def test_a_human_message_is_stored_without_moving_the_version(store: Store) -> None:
    task = await new_task(store)
    await store.apply(Change(task.id, NOW, rounds="inc"))
    after = await store.apply(Change(task.id, NOW, message=MessageDraft("bob", "use tabs")))
    assert after is not None and after.version == task.version
    changed = await store.apply(
        Change(task.id, NOW, message=MessageDraft("bob", "no, spaces"), rounds="reset")
    )
    assert changed is not None and changed.rounds == 0
    assert [m.text for m in await store.messages(task.id)] == ["use tabs", "no, spaces"]
    assert all(m.before_seq == 1 for m in await store.messages(task.id))


async def test_a_message_for_a_task_that_closed_meanwhile_is_refused(store: Store) -> None:
    """The handler read the task while it was open; it closed before the message landed. The
    message must not be buried on the closed task: the change aborts and the caller re-reads."""
    task = await new_task(store)
    await store.apply(Change(task.id, NOW, expect_version=task.version, event="stop"))
    late = await store.apply(Change(task.id, NOW, message=MessageDraft("bob", "also a README")))
    assert late is None
    assert await store.messages(task.id) == []


# -- turns, usage, firings, verdicts -----------------------------------------------------------


async def begin(store: Store, task: Task | None, owner: str = "e1") -> Turn:
    assert task is not None
    assert await store.claim(task.id, owner, NOW, 30)
    fresh = await store.task(task.id)
    assert fresh is not None
    turn = await store.begin_turn(fresh, "owner", owner, NOW)
    assert turn is not None
    return turn


async def test_finishing_a_turn_stores_output_usage_firing_and_transition(store: Store) -> None:
    task = await new_task(store)
    turn = await begin(store, task)
    assert turn.seq == 1 and turn.status == "running"
    tid = turn.id
    done = await store.apply(
        Change(
            task.id,
            NOW + 5,
            expect_version=0,
            expect_lease="e1",
            event="BLOCKED",
            turn=TurnEnd(
                tid,
                "done",
                NOW + 5,
                output="BLOCKED: no key",
                marker="BLOCKED",
                tree="abc",
                session_id="s1",
                usage=Usage(100, 20, 0.5),
            ),
            firing=FiringDraft(Firing(detector="blocked", reason="no key", fingerprint="f"), tid),
            outbox=[note("turn1")],
            rounds="inc",
        )
    )
    assert done is not None
    assert (done.status, done.tokens, done.cost_usd, done.turns, done.rounds) == (
        "arbitration",
        120,
        0.5,
        1,
        1,
    )
    [stored] = await store.turns(task.id)
    assert (stored.status, stored.output, stored.marker, stored.tree, stored.session_id) == (
        "done",
        "BLOCKED: no key",
        "BLOCKED",
        "abc",
        "s1",
    )
    [firing] = await store.firings(task.id)
    assert firing.firing.fingerprint == "f" and firing.turn_id == tid
    assert await store.usage_totals(task.id) == (100, 20, 0.5)

    # The same turn cannot be finished twice.
    again = Change(task.id, NOW, turn=TurnEnd(tid, "done", NOW, output="again"))
    assert await store.apply(again) is None
    assert (await store.turns(task.id))[0].output == "BLOCKED: no key"


async def test_a_verdict_is_stored_with_its_ruling(store: Store) -> None:
    task = await new_task(store)
    turn = await begin(store, task)
    ruling = Ruling(verdict="REVISE", reasons="tests missing", conditions=["add a test"])
    await store.apply(
        Change(
            task.id,
            NOW,
            turn=TurnEnd(turn.id, "done", NOW, output="REVISE"),
            verdict=VerdictDraft(turn.id, ruling, "/tmp/rec.md", None),
        )
    )
    [v] = await store.verdicts(task.id)
    assert (v.ruling, v.turn_seq, v.record_path) == (ruling, 1, "/tmp/rec.md")


async def test_begin_turn_needs_the_lease_and_the_current_version(store: Store) -> None:
    task = await new_task(store)
    assert await store.begin_turn(task, "owner", "e1", NOW) is None  # no lease
    assert await store.claim(task.id, "e1", NOW, 30)
    assert await store.begin_turn(task, "owner", "e2", NOW) is None  # not the holder
    assert await store.begin_turn(task, "owner", "e1", NOW + 31) is None  # lease expired
    first = await store.begin_turn(task, "owner", "e1", NOW)
    second = await store.begin_turn(task, "owner", "e1", NOW)
    assert first is not None and second is not None
    assert (first.seq, second.seq) == (1, 2)
    moved = await store.apply(Change(task.id, NOW, expect_version=0, event="DONE"))
    assert moved is not None
    assert await store.begin_turn(task, "reviewer", "e1", NOW) is None  # stale version


async def test_interrupting_keeps_the_output_and_only_touches_running_turns(store: Store) -> None:
    task = await new_task(store)
    a = await begin(store, task)
    await store.apply(Change(task.id, NOW, turn=TurnEnd(a.id, "done", NOW, output="one")))
    b = await begin(store, task)
    hit = await store.interrupt_turns(task.id, "engine stopped", NOW, output="partial")
    assert [t.id for t in hit] == [b.id]
    turns = await store.turns(task.id)
    assert [(t.status, t.output) for t in turns] == [("done", "one"), ("interrupted", "partial")]
    assert turns[1].error == "engine stopped"


# -- escalations -------------------------------------------------------------------------------


def escalation(question: str = "go on?") -> EscalationDraft:
    return EscalationDraft(
        kind="ruling",
        question=question,
        options=("yes", "no"),
        reason="arbiter escalated",
        post=lambda eid: OutboxDraft(
            key=f"esc:{eid}",
            room=ROOM,
            text=question,
            actions=(Action("approve", "Approve", str(eid)), Action("reject", "Reject", str(eid))),
        ),
    )


async def test_an_escalation_is_announced_with_buttons_carrying_its_id(store: Store) -> None:
    task = await new_task(store)
    waiting = await store.apply(
        Change(task.id, NOW, expect_version=0, event="failed", escalation=escalation())
    )
    assert waiting is not None and waiting.status == "waiting_human"
    esc = await store.open_escalation(task.id)
    assert esc is not None and esc.options == ("yes", "no")
    [row] = await store.outbox()
    assert [a.value for a in row.actions] == [str(esc.id), str(esc.id)]


async def test_an_answer_to_a_closed_escalation_changes_nothing(store: Store) -> None:
    task = await new_task(store)
    await store.apply(
        Change(task.id, NOW, expect_version=0, event="failed", escalation=escalation())
    )
    esc = await store.open_escalation(task.id)
    assert esc is not None
    answered = await store.apply(
        Change(
            task.id,
            NOW,
            expect_version=1,
            event="approve",
            answer=AnswerDraft(esc.id, "approve", "boss"),
        )
    )
    assert answered is not None and answered.status == "owner_turn"
    stored = await store.escalation(esc.id)
    assert stored is not None and (stored.status, stored.answered_by) == ("answered", "boss")
    # A second click (with a fresh version, even) is refused: the escalation is not open.
    late = Change(
        task.id, NOW, expect_version=2, event="stop", answer=AnswerDraft(esc.id, "reject", "boss")
    )
    assert await store.apply(late) is None
    assert (await store.task(task.id)).status == "owner_turn"  # type: ignore[union-attr]


async def test_leaving_waiting_human_closes_the_open_escalation(store: Store) -> None:
    task = await new_task(store)
    await store.apply(
        Change(task.id, NOW, expect_version=0, event="failed", escalation=escalation())
    )
    await store.apply(Change(task.id, NOW, expect_version=1, event="stop"))
    [esc] = await store.escalations(task.id)
    assert esc.status == "closed"
    assert await store.open_escalation(task.id) is None


# -- helpers ---------------------------------------------------------------------------------------


async def snapshot(store: Store, task_id: int) -> tuple[object, ...]:
    return (
        await store.task(task_id),
        await store.turns(task_id),
        await store.messages(task_id),
        await store.firings(task_id),
        await store.verdicts(task_id),
        await store.escalations(task_id),
        await store.outbox(),
        await store.usage_totals(task_id),
    )


@pytest.mark.parametrize("lost", ["taken over", "released"])
async def test_a_turn_result_without_the_lease_changes_nothing(store: Store, lost: str) -> None:
    """The lease guard of a Change: an engine whose lease was taken over (it expired and another
    engine claimed it) or released cannot land its turn's result, transition or posts."""
    task = await new_task(store)
    turn = await begin(store, task)
    if lost == "taken over":
        assert not await store.claim(task.id, "e2", NOW + 10, 30)  # e1's lease still runs
        assert await store.claim(task.id, "e2", NOW + 31, 30)  # expired: e2 takes it
    else:
        await store.release(task.id, "e1")
    change = Change(
        task.id,
        NOW + 40,
        expect_version=0,
        expect_lease="e1",
        event="DONE",
        turn=TurnEnd(turn.id, "done", NOW + 40, output="DONE", marker="DONE"),
        outbox=[note("late")],
        rounds="inc",
    )
    assert await store.apply(change) is None
    after = await store.task(task.id)
    assert after is not None and (after.status, after.version) == ("owner_turn", 0)
    [still] = await store.turns(task.id)
    assert (still.status, still.output) == ("running", "")
    assert await store.outbox() == []
