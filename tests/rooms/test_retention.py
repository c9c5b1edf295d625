"""Retention: the store prunes event ids, finished outbox rows and closed tasks' usage past the
retention, and never what may still be needed; the engine prunes at start and then hourly."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rooms.base.model import RoomRef, Task
from rooms.base.records import Change, OutboxDraft, TurnEnd, Usage
from rooms.engine import Engine
from rooms.store import Store
from rooms.store.retention import DAY_S, PRUNE_EVERY_S, Pruned, Pruner
from tests.fakes.engine_kit import FakeClock, engine_kit
from tests.rooms.store_helpers import store

__all__ = ["store"]  # the fixture, imported for pytest

P = 400 * DAY_S  # the moment of the prune
KEEP_S = 30 * DAY_S
OLD = P - 31 * DAY_S  # older than the retention
YOUNG = P - 29 * DAY_S  # within it


def room(n: int) -> RoomRef:
    return RoomRef("test", "C1", f"T{n}")


async def task_with_usage(store: Store, n: int, opened: float, used: float) -> Task:
    """A task in room n whose first turn finished at `used` and spent 100+20 tokens, $0.5."""
    task = await store.open_task(room(n), "g", "build it", "alice", opened)
    assert task is not None
    assert await store.claim(task.id, "e1", used, 30)
    fresh = await store.task(task.id)
    assert fresh is not None
    turn = await store.begin_turn(fresh, "owner", "e1", used)
    assert turn is not None
    end = TurnEnd(turn.id, "done", used, output="DONE", usage=Usage(100, 20, 0.5))
    done = await store.apply(
        Change(task.id, used, expect_version=0, expect_lease="e1", event="DONE", turn=end)
    )
    assert done is not None
    return done


async def close(store: Store, task: Task, at: float) -> None:
    closed = await store.apply(Change(task.id, at, expect_version=task.version, event="stop"))
    assert closed is not None and closed.status == "closed"


async def post(
    store: Store, key: str, n: int, at: float, task: Task | None, end: str, ended: float
) -> None:
    """An outbox row enqueued at `at` (for `task` or none) that ended `end` at `ended`:
    "sent", "dead" (given up) or "pending" (still failing, retried at `ended`)."""
    draft = OutboxDraft(key=key, room=room(n), text=key)
    if task is None:
        assert await store.enqueue([draft], at, group="g")
    else:
        assert await store.apply(Change(task.id, at, outbox=[draft])) is not None
    [row] = [r for r in await store.outbox() if r.key == key]
    if end == "sent":
        await store.mark_sent(row.id, f"m-{key}", ended)
    else:
        await store.mark_failed(row.id, "boom", ended, give_up=end == "dead")


# Every kind and age of row, and whether a prune at P with a 30-day retention keeps it.
EVENTS = {
    "event 31 days old": (OLD, False),
    "event 29 days old": (YOUNG, True),
}
TASKLESS_POSTS = {  # (enqueued, how it ended, when it ended, kept)
    "sent 31 days ago": (OLD - DAY_S, "sent", OLD, False),
    "sent 29 days ago": (OLD - DAY_S, "sent", YOUNG, True),
    "enqueued long ago, sent 29 days ago": (P - 90 * DAY_S, "sent", YOUNG, True),
    "given up 31 days ago": (OLD - DAY_S, "dead", OLD, False),
    "given up 29 days ago": (OLD - DAY_S, "dead", YOUNG, True),
    "pending since 90 days": (P - 90 * DAY_S, "pending", OLD, True),
}
# Tasks: opened, first turn used, closed (None: still open); their usage row is kept or not.
TASKS = {
    "closed 31 days ago": (P - 60 * DAY_S, P - 59 * DAY_S, OLD, False),
    "closed 29 days ago": (P - 60 * DAY_S, P - 59 * DAY_S, YOUNG, True),
    "open for 90 days": (P - 90 * DAY_S, P - 89 * DAY_S, None, True),
}
# Posts of each task: all sent or given up 50 days ago, or pending; kept unless the task is.
TASK_POSTS = {
    "sent": (P - 50 * DAY_S, "sent", P - 50 * DAY_S),
    "dead": (P - 50 * DAY_S, "dead", P - 50 * DAY_S),
    "pending": (P - 50 * DAY_S, "pending", P - 50 * DAY_S),
}
LAST_POST = "the newest post, sent 31 days ago"  # kept: its id must never be handed out again


async def build(store: Store) -> dict[str, bool]:
    """Fill the store with every row of the tables above; returns what must survive."""
    expected: dict[str, bool] = {}
    for name, (at, kept) in EVENTS.items():
        assert await store.record_event(name, at)
        expected[f"events: {name}"] = kept
    for n, (name, (opened, used, closed, kept)) in enumerate(TASKS.items(), start=1):
        task = await task_with_usage(store, n, opened, used)
        expected[f"usage: task {name}"] = kept
        for end, (at, how, ended) in TASK_POSTS.items():
            key = f"task {name}, {end}"
            await post(store, key, n, at, task, how, ended)
            expected[f"outbox: {key}"] = kept or how == "pending"
        if closed is not None:
            fresh = await store.task(task.id)
            assert fresh is not None
            await close(store, fresh, closed)
    for name, (at, how, ended, kept) in TASKLESS_POSTS.items():
        await post(store, name, 9, at, None, how, ended)
        expected[f"outbox: {name}"] = kept
    await post(store, LAST_POST, 9, OLD - DAY_S, None, "sent", OLD)
    expected[f"outbox: {LAST_POST}"] = True
    return expected


async def survivors(store: Store, expected: dict[str, bool]) -> dict[str, bool]:
    """Which of the built rows are still there, by the same names."""
    events = {name for name in EVENTS if await store.seen_event(name)}
    posts = {r.key for r in await store.outbox()}
    found = {}
    for label in expected:
        kind, _, name = label.partition(": ")
        if kind == "events":
            found[label] = name in events
        elif kind == "outbox":
            found[label] = name in posts
        else:
            n = list(TASKS).index(name.removeprefix("task ")) + 1
            found[label] = await store.usage_totals(n) != (0, 0, 0.0)
    return found


async def test_a_prune_keeps_exactly_what_may_still_be_needed(store: Store) -> None:
    expected = await build(store)
    assert all((await survivors(store, expected)).values())  # the build is complete

    pruned = await store.prune(P, KEEP_S)

    assert await survivors(store, expected) == expected
    gone = [label for label, kept in expected.items() if not kept]
    assert pruned.total == len(gone)
    assert pruned == Pruned(
        events=sum(1 for g in gone if g.startswith("events")),
        outbox=sum(1 for g in gone if g.startswith("outbox")),
        usage=sum(1 for g in gone if g.startswith("usage")),
    )
    # The tasks' own totals stay, so `status` still shows what a pruned task spent.
    for n in range(1, len(TASKS) + 1):
        task = await store.task(n)
        assert task is not None and (task.tokens, task.cost_usd) == (120, 0.5)
    # A second prune finds nothing more.
    assert await store.prune(P, KEEP_S) == Pruned()


async def test_an_event_id_is_kept_a_day_whatever_the_retention(store: Store) -> None:
    """A platform may still retry a recent event: with a one-hour retention an event id of two
    hours is kept (a retry would otherwise run the command again), one of 25 hours is not."""
    assert await store.record_event("two hours", P - 2 * 3600)
    assert await store.record_event("25 hours", P - 25 * 3600)
    assert await store.prune(P, 3600) == Pruned(events=1)
    assert await store.seen_event("two hours")
    assert not await store.seen_event("25 hours")
    assert not await store.record_event("two hours", P)  # still recognised as a retry


async def test_the_newest_outbox_id_is_never_handed_out_again(store: Store) -> None:
    """Pruning the row with the highest id would let SQLite give its id to the next row, and a
    platform that deduplicates by outbox id would drop that new post."""
    await post(store, "only", 9, OLD - DAY_S, None, "sent", OLD)
    [only] = await store.outbox()
    assert await store.prune(P, KEEP_S) == Pruned()
    assert await store.enqueue([OutboxDraft(key="next", room=room(9), text="x")], P, group="g")
    assert [r.id for r in await store.outbox()] == [only.id, only.id + 1]


async def test_a_large_backlog_goes_in_batches(store: Store) -> None:
    for i in range(7):
        assert await store.record_event(f"e{i}", OLD)
    assert await store.prune(P, KEEP_S, batch=3) == Pruned(events=7)
    assert not any([await store.seen_event(f"e{i}") for i in range(7)])


@pytest.mark.parametrize(("keep_s", "batch"), [(0, 10), (-DAY_S, 10), (DAY_S, 0)])
async def test_a_prune_that_would_keep_nothing_is_refused(
    store: Store, keep_s: float, batch: int
) -> None:
    assert await store.record_event("e", OLD)
    with pytest.raises(ValueError, match="prune needs"):
        await store.prune(P, keep_s, batch=batch)
    assert await store.seen_event("e")


# -- the engine's schedule ----------------------------------------------------------------------


@pytest.mark.parametrize("days", [-1, 36_501, True, 1.5])
def test_the_engine_refuses_a_bad_retention(store: Store, days: int) -> None:
    with pytest.raises(ValueError, match="retention_days"):
        Pruner(store, FakeClock(), days)


async def test_zero_days_keeps_everything(store: Store) -> None:
    assert await store.record_event("e", 0.0)
    assert await Pruner(store, FakeClock(P), 0).maybe() is None
    assert await store.seen_event("e")


async def test_the_engine_prunes_at_start_and_then_hourly_by_its_clock(tmp_path: Path) -> None:
    clock = FakeClock(P)
    async with engine_kit(tmp_path, clock=clock, start=False) as kit:
        assert isinstance(kit.engine, Engine) and kit.engine.pruner.retention_days == 30
        kit.engine.scan_s = 0.0  # the scan loop only yields between rounds: no real sleep
        assert await kit.store.record_event("old", OLD)
        assert await kit.store.record_event("young", YOUNG)

        await kit.engine.start()
        await until_gone(kit.store, "old")
        assert await kit.store.seen_event("young")

        clock.advance(2 * DAY_S - 1)  # "young" is now 31 days old; an hour has passed
        await until_gone(kit.store, "young")

        assert await kit.store.record_event("later", clock.now() - 40 * DAY_S)
        clock.advance(PRUNE_EVERY_S / 2)  # not an hour since the last prune: kept for now
        await rounds_of(kit.engine, 3)
        assert await kit.store.seen_event("later")
        clock.advance(PRUNE_EVERY_S / 2)
        await until_gone(kit.store, "later")


async def test_a_failing_prune_is_logged_and_tried_again_an_hour_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(P)
    async with engine_kit(tmp_path, clock=clock, start=False) as kit:
        kit.engine.scan_s = 0.0
        real, calls = kit.store.prune, 0

        async def broken_once(now: float, keep_s: float, **kw: Any) -> Pruned:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise sqlite3.OperationalError("disk I/O error")
            return await real(now, keep_s, **kw)

        kit.store.prune = broken_once  # type: ignore[method-assign]
        assert await kit.store.record_event("old", OLD)
        await kit.engine.start()
        await rounds_of(kit.engine, 3)  # the loop goes on after the failure
        assert calls == 1 and await kit.store.seen_event("old")
        assert "pruning the store past the retention failed" in caplog.text
        clock.advance(PRUNE_EVERY_S)
        await until_gone(kit.store, "old")
        assert calls == 2


async def rounds_of(engine: Engine, n: int) -> None:
    """Let the engine's scan loop ask its pruner `n` more times."""
    asked = 0
    maybe = engine.pruner.maybe

    async def counted() -> Pruned | None:
        nonlocal asked
        asked += 1
        return await maybe()

    engine.pruner.maybe = counted  # type: ignore[method-assign]
    try:
        async with asyncio.timeout(5):
            while asked < n:
                await asyncio.sleep(0)
    finally:
        del engine.pruner.maybe


async def until_gone(store: Store, event_id: str) -> None:
    async with asyncio.timeout(5):
        while await store.seen_event(event_id):
            await asyncio.sleep(0)
