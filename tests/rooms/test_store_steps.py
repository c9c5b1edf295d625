"""A step's two round trips (rooms/store/steps.py), on both databases: the end of a turn is
written only when people did nothing the decision missed while the turn ran; otherwise nothing
is written and what they did comes back, for the decision to be made again."""

from __future__ import annotations

from rooms.base.model import Summon
from rooms.base.records import Change, MessageDraft, OutboxDraft, TurnEnd
from rooms.store import Store
from rooms.store.apply import Stale
from tests.rooms.store_helpers import NOW, ROOM, new_task, store

__all__ = ["store"]  # the fixture, imported for pytest
LEASE = 60.0


async def _running(store: Store) -> tuple[int, int, int]:
    """A task whose owner's turn runs: (task id, its version, the turn's id)."""
    task = await new_task(store)
    claimed = await store.claim_task(task.id, "e1", NOW, LEASE)
    assert claimed is not None
    begun = await store.begin_step(
        claimed, "owner", "e1", NOW, wall=NOW, lease_s=LEASE, since_message=0
    )
    assert begun is not None
    turn, messages, _ = begun
    assert messages == []
    return task.id, claimed.version, turn.id


def _end(
    task_id: int, version: int, turn_id: int, seen: int, summon: Summon | None = None
) -> Change:
    return Change(
        task_id,
        NOW + 1,
        expect_version=version,
        expect_lease="e1",
        event="DONE",
        turn=TurnEnd(turn_id, "done", NOW + 1, output="DONE\nv1", marker="DONE"),
        outbox=[OutboxDraft(key="turn", room=ROOM, text="DONE v1")],
        seen_message=seen,
        seen_summon=summon,
    )


async def test_a_message_written_while_the_turn_ran_makes_the_end_stale(store: Store) -> None:
    task_id, version, turn_id = await _running(store)
    written = await store.apply(
        Change(task_id, NOW + 0.5, message=MessageDraft("carol", "keep it small"))
    )
    assert written is not None
    stale = await store.apply_step(_end(task_id, version, turn_id, seen=0))
    assert isinstance(stale, Stale)
    assert [m.text for m in stale.messages] == ["keep it small"] and stale.summon is None
    # Nothing of the change was written: the turn still runs, the task has not moved.
    [turn] = await store.turns(task_id)
    assert turn.status == "running"
    assert (await store.task(task_id)).status == "owner_turn"  # type: ignore[union-attr]
    assert await store.count_pending() == 0  # nor its post
    # Decided again with the message in view: written.
    seen = stale.messages[-1].id
    applied = await store.apply_step(_end(task_id, version, turn_id, seen=seen))
    assert not isinstance(applied, Stale) and applied is not None
    assert applied.status == "review_turn" and applied.version == version + 1
    assert [t.status for t in await store.turns(task_id)] == ["done"]
    assert await store.count_pending() == 1


async def test_an_arbitrate_called_while_the_turn_ran_makes_the_end_stale(store: Store) -> None:
    task_id, version, turn_id = await _running(store)
    summon = Summon(by="dave", note="look at it", at=NOW + 0.5)
    assert await store.apply(Change(task_id, NOW + 0.5, summon=summon)) is not None
    stale = await store.apply_step(_end(task_id, version, turn_id, seen=0))
    assert isinstance(stale, Stale) and stale.messages == [] and stale.summon == summon
    assert [t.status for t in await store.turns(task_id)] == ["running"]
    # A decision that saw the summon is written (the summon stays pending for the driver).
    applied = await store.apply_step(_end(task_id, version, turn_id, seen=0, summon=summon))
    assert not isinstance(applied, Stale) and applied is not None
    assert applied.summon == summon


async def test_a_lost_guard_is_none_not_stale(store: Store) -> None:
    task_id, version, turn_id = await _running(store)
    assert await store.apply_step(_end(task_id, version + 1, turn_id, seen=0)) is None
    applied = await store.apply_step(_end(task_id, version, turn_id, seen=0))
    assert applied is not None and not isinstance(applied, Stale)
