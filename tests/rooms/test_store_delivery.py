"""The store's delivery side: inbound event de-duplication, the outbox, task leases."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooms.base.model import Card
from rooms.base.records import Change, MessageDraft, OutboxDraft
from rooms.store import Store
from tests.rooms.store_helpers import DATABASES, NOW, ROOM, database, new_task, note, store

__all__ = ["store"]  # the fixture, imported for pytest

# -- events --------------------------------------------------------------------------------------


async def test_event_dedupe(store: Store) -> None:
    assert await store.record_event("Ev1", NOW) is True
    assert await store.record_event("Ev1", NOW) is False
    assert await store.seen_event("Ev1") and not await store.seen_event("Ev2")


async def test_a_change_for_an_event_seen_before_is_not_applied(store: Store) -> None:
    task = await new_task(store)
    first = Change(task.id, NOW, event_id="Ev9", message=MessageDraft("bob", "hi"))
    assert await store.apply(first) is not None
    assert await store.apply(first) is None
    assert len(await store.messages(task.id)) == 1
    assert await store.open_task(ROOM, "g", "x", "bob", NOW, event_id="Ev9") is None
    assert await store.enqueue([note("r")], NOW, group="g", event_id="Ev9") is False
    assert [r.key for r in await store.outbox()] == []


# -- outbox ----------------------------------------------------------------------------------------


async def test_outbox_enqueue_is_idempotent_and_ordered(store: Store) -> None:
    assert await store.enqueue([note("a", "1"), note("b", "2")], NOW, group="g")
    assert await store.enqueue([note("a", "1 again"), note("c", "3")], NOW, group="g")
    rows = await store.pending_outbox()
    assert [(r.key, r.text) for r in rows] == [("a", "1"), ("b", "2"), ("c", "3")]
    assert rows[0].room == ROOM


async def test_outbox_delivery_at_least_once_then_never_again(store: Store) -> None:
    await store.enqueue([note("a"), note("b")], NOW, group="g")
    a, b = await store.pending_outbox()
    # Deliverer e1 claims a and dies before marking it sent: nobody else takes it until the
    # claim expires, then e2 delivers it again (at least once) with the same outbox id.
    assert await store.claim_outbox(a.id, "e1", NOW, 10)
    assert not await store.claim_outbox(a.id, "e2", NOW + 5, 10)
    assert await store.claim_outbox(b.id, "e2", NOW + 5, 10)  # other rows are free
    assert await store.claim_outbox(a.id, "e2", NOW + 11, 10)
    await store.mark_sent(a.id, "msg-1", NOW + 12)
    assert not await store.claim_outbox(a.id, "e1", NOW + 100, 10)  # sent: never again
    [sent] = await store.outbox(status="sent")
    assert (sent.id, sent.message_id, sent.attempts) == (a.id, "msg-1", 2)
    assert [r.key for r in await store.pending_outbox()] == ["b"]
    assert await store.count_pending() == 1


async def test_a_failed_delivery_stays_pending_until_its_retry_time(store: Store) -> None:
    await store.enqueue([note("a")], NOW, group="g")
    [a] = await store.pending_outbox()
    assert await store.claim_outbox(a.id, "e1", NOW, 10)
    await store.mark_failed(a.id, "HTTP 500", NOW + 2)
    [again] = await store.pending_outbox()
    assert (again.last_error, again.attempts, again.next_try_at) == ("HTTP 500", 1, NOW + 2)
    assert again.claimed_by is None  # free for the next attempt once it is due
    await store.mark_failed(a.id, "HTTP 404: channel gone", NOW + 3, give_up=True)
    assert await store.count_pending() == 0
    [dead] = await store.outbox(status="dead")
    assert dead.last_error == "HTTP 404: channel gone"  # kept, not lost


# -- leases ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", DATABASES)
async def test_leases_claim_renew_expire_release(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    path = database(kind, request, tmp_path)
    a, b = await Store.open(path), await Store.open(path)
    task = await new_task(a)
    assert await a.claim(task.id, "A", NOW, 10)
    assert await a.claim(task.id, "A", NOW + 1, 10)  # re-claiming our own lease is fine
    assert not await b.claim(task.id, "B", NOW + 5, 10)
    assert await a.renew(task.id, "A", NOW + 9, 10)  # now held until NOW + 19
    assert not await b.claim(task.id, "B", NOW + 15, 10)
    assert await b.claim(task.id, "B", NOW + 20, 10)  # expired: taken over
    assert not await a.renew(task.id, "A", NOW + 21, 10)  # A learns it lost the lease
    await a.release(task.id, "A")  # releasing someone else's lease does nothing
    assert not await a.claim(task.id, "A", NOW + 22, 10)
    await b.release(task.id, "B")
    assert await a.claim(task.id, "A", NOW + 22, 10)
    extras = await a.task_extras(task.id)
    assert extras["lease_owner"] == "A"
    await a.close()
    await b.close()


async def test_a_closed_task_cannot_be_claimed_and_closing_releases(store: Store) -> None:
    task = await new_task(store)
    assert await store.claim(task.id, "A", NOW, 10)
    await store.apply(Change(task.id, NOW, expect_version=0, event="stop"))
    assert (await store.task_extras(task.id))["lease_owner"] is None
    assert not await store.claim(task.id, "A", NOW, 10)
    assert not await store.renew(task.id, "A", NOW, 10)


async def test_a_card_survives_the_outbox_round_trip(store: Store) -> None:
    card = Card(
        kind="ruling",
        title="Ruling: REVISE",
        sections=(("Reasons", "the test is flaky"), ("Conditions", "- fix it\n- rerun")),
        footer="arbitration 1 of 2",
        record_path="/data/records/task-1-ruling-1.md",
    )
    draft = OutboxDraft(key="k-card", room=ROOM, text="plain", persona="arbiter", card=card)
    assert await store.enqueue([draft, note("plain-one")], NOW, group="g")
    rows = {r.key: r for r in await store.pending_outbox()}
    assert rows["k-card"].card == card
    assert rows["plain-one"].card is None
