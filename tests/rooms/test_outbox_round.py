"""The deliverer's round in one round trip (rooms/store/outbox.py `outbox_round`): what the last
round posted is marked sent, and the head row of each room is claimed when it is due and free,
so two deliverers never hold one row and a room's rows go out in order."""

from __future__ import annotations

from rooms.base.model import RoomRef
from rooms.base.records import OutboxDraft
from rooms.store import Store
from tests.rooms.store_helpers import NOW, ROOM, note, store

__all__ = ["store"]  # the fixture, imported for pytest

OTHER = RoomRef("test", "C1", "T2")


async def test_a_round_claims_each_rooms_head_once_and_marks_what_was_posted(
    store: Store,
) -> None:
    await store.enqueue([note("a1"), note("a2"), OutboxDraft("b1", OTHER, "hello")], NOW, group="g")
    claimed, later = await store.outbox_round("e1", NOW, 10)
    assert [r.key for r in claimed] == ["a1", "b1"]  # heads only: a2 waits for a1
    assert [r.attempts for r in claimed] == [0, 0] and later is None
    # Another deliverer's round meanwhile: both heads are held, nothing for it.
    assert (await store.outbox_round("e2", NOW + 1, 10)) == ([], None)
    # e1 posted a1; its next round marks it sent and takes the room's next row (b1 it still
    # holds, as a deliverer may take again a row it claimed).
    a1 = claimed[0]
    claimed, _ = await store.outbox_round("e1", NOW + 2, 10, sent=[(a1.id, "m-a1", NOW + 2)])
    assert [r.key for r in claimed] == ["a2", "b1"]
    [sent] = await store.outbox(status="sent")
    assert (sent.key, sent.message_id, sent.claimed_by) == ("a1", "m-a1", None)
    assert (await store.outbox_round("e2", NOW + 3, 10)) == ([], None)
    # e1 stops without posting them: once its claims end, e2 takes them.
    claimed, _ = await store.outbox_round("e2", NOW + 13, 10)
    assert [(r.key, r.attempts) for r in claimed] == [("a2", 1), ("b1", 2)]


async def test_a_head_row_not_yet_due_holds_its_room_and_says_when(store: Store) -> None:
    await store.enqueue([note("a1"), note("a2")], NOW, group="g")
    [a1] = await store.pending_outbox(limit=1)
    assert await store.claim_outbox(a1.id, "e1", NOW, 10)
    await store.mark_failed(a1.id, "HTTP 500", NOW + 5)
    assert await store.outbox_round("e1", NOW + 1, 10) == ([], NOW + 5)
    claimed, later = await store.outbox_round("e1", NOW + 5, 10)
    assert [r.key for r in claimed] == ["a1"] and later is None


async def test_several_posted_rows_are_marked_together(store: Store) -> None:
    await store.enqueue([note("a1"), OutboxDraft("b1", OTHER, "x")], NOW, group="g")
    claimed, _ = await store.outbox_round("e1", NOW, 10)
    posted = [(r.id, f"m-{r.key}", NOW + 1) for r in claimed]
    assert await store.outbox_round("e1", NOW + 1, 10, sent=posted) == ([], None)
    assert sorted(r.key for r in await store.outbox(status="sent")) == ["a1", "b1"]
    assert await store.count_pending() == 0
    assert ROOM != OTHER
