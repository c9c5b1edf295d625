"""The store's wake-ups on PostgreSQL (rooms/store/listen.py): what the triggers notify, read
back (table-driven), and a notification arriving at a listener once its transaction commits."""

from __future__ import annotations

import asyncio
import time

import pytest

from rooms.base.model import GroupPolicy, RoomRef
from rooms.base.records import OutboxDraft
from rooms.engine import Engine
from rooms.store import Store
from rooms.store.listen import RESYNC, Wake, listens, parse
from tests.fakes.engine_kit import StaticPolicies
from tests.fakes.platform import RecordingPlatform
from tests.fakes.postgres import Server
from tests.fakes.runner import Reply, ScriptedRunner


@pytest.mark.parametrize(
    ("payload", "wake"),
    [
        (RESYNC, Wake(RESYNC)),
        ("outbox::slack:C1:1700.1", Wake("outbox", room="slack:C1:1700.1")),
        ("outbox:E1:slack:C1:1700.1", Wake("outbox", room="slack:C1:1700.1", lease_owner="E1")),
        ("outbox:E1", None),
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


async def test_an_engine_is_woken_for_a_task_and_a_post_made_elsewhere(postgres: Server) -> None:
    """With the scan and the deliverer's poll at 30 s, only a wake-up explains a task opened by
    another process starting its first turn, and its acknowledgement going out, within 10 s."""
    url = postgres.fresh_url()
    store, other = await Store.open(url), await Store.open(url)
    runner = ScriptedRunner({"owner": [Reply(hang=True)]})
    platform = RecordingPlatform()
    policies = StaticPolicies(GroupPolicy(name="g", approvers=frozenset({"boss"})))
    engine = Engine(store, runner, platform, policies, engine_id="E1")
    engine.scan_s = 30.0
    engine.outbox.poll_s = 30.0
    try:
        await engine.start()
        await asyncio.sleep(0.5)  # listening, and the first scan (at its start) found nothing
        room = RoomRef("test", "C1", "T1")
        ack = OutboxDraft("ack", room, "opened")
        await other.open_task(room, "g", "build it", "alice", time.time(), outbox=[ack])
        await runner.wait_calls(1, timeout=10)
        async with asyncio.timeout(10):
            while not [m for m in platform.messages() if m.message.text == "opened"]:
                await asyncio.sleep(0.05)
    finally:
        await engine.stop()
        await store.close()
        await other.close()
