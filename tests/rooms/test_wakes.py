"""The store's wake-ups on PostgreSQL (rooms/store/listen.py): what the triggers notify, read
back (table-driven), and a notification arriving at a listener once its transaction commits."""

from __future__ import annotations

import asyncio
import time

import pytest

from rooms.base.model import RoomRef
from rooms.base.records import OutboxDraft
from rooms.store import Store
from rooms.store.listen import RESYNC, Wake, listens, parse
from tests.fakes.postgres import Server


@pytest.mark.parametrize(
    ("payload", "wake"),
    [
        (RESYNC, Wake(RESYNC)),
        ("outbox:slack:C1:1700.1", Wake("outbox", room="slack:C1:1700.1")),
        ("task:7:slack:C1:1700.1::", Wake("task", "slack:C1:1700.1", 7, "", None)),
        ("task:7:test:C1:T1:engine-ab:1234.5", Wake("task", "test:C1:T1", 7, "engine-ab", 1234.5)),
        ("task:x:test:C1:T1::", None),
        ("task:7:test:C1:T1:e:soon", None),
        ("task:7", None),
        ("other:1", None),
        ("", None),
    ],
)  # fmt: skip
def test_payloads_read(payload: str, wake: Wake | None) -> None:
    assert parse(payload) == wake


async def test_a_task_opened_and_a_post_enqueued_wake_a_listener(postgres: Server) -> None:
    url = postgres.fresh_url()
    store = await Store.open(url)
    wakes = store.wakes()
    assert wakes is not None
    try:
        assert await anext(wakes) == RESYNC  # listening from here on
        room = RoomRef("test", "C1", "T1")
        task = await store.open_task(
            room, "g", "build it", "alice", time.time(), outbox=[OutboxDraft("ack", room, "ok")]
        )
        assert task is not None
        seen = set()
        async with asyncio.timeout(10):
            while len(seen) < 2:
                wake = parse(await anext(wakes))
                assert wake is not None
                seen.add((wake.kind, wake.room, wake.task_id))
        assert seen == {("task", room.key, task.id), ("outbox", room.key, 0)}
        await store.claim(task.id, "E9", time.time(), 30)
        await store.renew(task.id, "E9", time.time(), 30)  # a renewal wakes nobody
        await store.release(task.id, "E9")  # a release does: another engine may take it
        async with asyncio.timeout(10):
            released = parse(await anext(wakes))
        assert released == Wake("task", room.key, task.id, "", None)
    finally:
        await wakes.aclose()  # type: ignore[attr-defined]
        await store.close()


async def test_sqlite_has_no_wakes(tmp_path: object) -> None:
    store = await Store.open(f"{tmp_path}/t.db")
    assert store.wakes() is None
    await store.close()


async def test_listen_works_on_the_server(postgres: Server) -> None:
    await listens(postgres.url)
