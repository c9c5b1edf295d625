"""The outbox deliverer (rooms/core/outbox.py): one failing room holds back only itself, and a
failed row is retried on the documented backoff schedule, then set aside as dead."""

from __future__ import annotations

from dataclasses import dataclass, field

from rooms.base.model import Outbound, RoomRef
from rooms.base.records import OutboxDraft
from rooms.core.context import Ctx
from rooms.core.outbox import Deliverer
from rooms.store import Store
from tests.rooms.store_helpers import store

__all__ = ["store"]  # the fixture, imported for pytest

BROKEN = RoomRef("test", "C1", "broken")
FINE = RoomRef("test", "C1", "fine")


@dataclass
class RoomFailingPlatform:
    """Refuses every post to `failing` rooms, takes the others."""

    failing: set[str]
    taken: list[Outbound] = field(default_factory=list)

    async def deliver(self, message: Outbound) -> str | None:
        if message.room.key in self.failing:
            raise ConnectionError(f"{message.room.thread} is unreachable")
        self.taken.append(message)
        return f"m{len(self.taken)}"


class SteppedCtx(Ctx):
    """Wall time that only moves when the test says so."""

    t = 10_000.0

    def wall(self) -> float:  # type: ignore[override]
        return self.t


def context(store: Store, platform: RoomFailingPlatform) -> SteppedCtx:
    return SteppedCtx(store, None, platform, None, None, "e1", 30.0, None)  # type: ignore[arg-type]


def drafts(room: RoomRef, count: int, prefix: str) -> list[OutboxDraft]:
    return [OutboxDraft(f"{prefix}{i}", room, f"{prefix} {i}") for i in range(count)]


async def test_a_failing_room_with_many_rows_does_not_hold_back_the_others(
    store: Store,
) -> None:
    platform = RoomFailingPlatform({BROKEN.key})
    deliverer = Deliverer(context(store, platform))
    await store.enqueue(drafts(BROKEN, 300, "stuck"), 1.0, group="g")
    await store.enqueue(drafts(FINE, 3, "fine"), 1.0, group="g")
    await deliverer.deliver_due()
    assert [m.text for m in platform.taken] == ["fine 0", "fine 1", "fine 2"]
    # The broken room's first row was tried once and waits; none after it was tried.
    broken = [r for r in await store.pending_outbox(limit=1000) if r.room == BROKEN]
    assert len(broken) == 300
    assert [r.attempts for r in broken[:2]] == [1, 0]


async def test_a_failed_row_is_retried_on_the_backoff_schedule_then_dead(store: Store) -> None:
    platform = RoomFailingPlatform({BROKEN.key})
    ctx = context(store, platform)
    deliverer = Deliverer(ctx, max_attempts=6, first_backoff_s=0.5, max_backoff_s=3.0)
    await store.enqueue(drafts(BROKEN, 1, "row") + drafts(BROKEN, 1, "after"), 1.0, group="g")
    waits = []
    for _ in range(6):
        wait = await deliverer.deliver_due()
        pending = await store.pending_outbox()
        if pending and pending[0].key == "row0":
            waits.append(round(pending[0].next_try_at - ctx.t, 3))
            assert wait == min(waits[-1], deliverer.poll_s)  # the loop sleeps until then
            ctx.t = pending[0].next_try_at
    assert waits == [0.5, 1.0, 2.0, 3.0, 3.0]  # doubling, capped; the 6th attempt gives up
    [dead] = await store.outbox(status="dead")
    assert (dead.key, dead.attempts) == ("row0", 6)
    assert "unreachable" in (dead.last_error or "")
    # Set aside, it no longer blocks its room: the next row is tried at once.
    [after] = await store.pending_outbox()
    assert (after.key, after.attempts) == ("after0", 1)


async def test_a_sent_rows_platform_id_is_found_by_its_key_and_only_once_sent(
    store: Store,
) -> None:
    """How a decided card finds the question's card after a restart (Engine.question_message):
    nothing while the row waits or after it is set aside, the platform's id once it is sent."""
    platform = RoomFailingPlatform({BROKEN.key})
    deliverer = Deliverer(context(store, platform), max_attempts=1)
    await store.enqueue(drafts(FINE, 2, "card") + drafts(BROKEN, 1, "lost"), 1.0, group="g")
    assert await store.sent_message_id("card0") is None, "pending: not posted yet"
    await deliverer.deliver_due()
    assert await store.sent_message_id("card0") == "m1"
    assert await store.sent_message_id("card1") == "m2"
    assert await store.sent_message_id("lost0") is None, "dead: never posted"
    assert await store.sent_message_id("no such key") is None
