"""Edits in place at Slack's pace: a storm of progress updates becomes a handful of chat.update
calls, the latest text wins, and an edit from the outbox is never dropped. Time is a manual
clock: nothing here sleeps."""

from __future__ import annotations

import asyncio

from rooms.base.model import Outbound, RoomRef
from tests.bot.slack.kit import ManualClock, adapter_on_fake

ROOM = RoomRef("slack", "C1", "1690000001.000200")


async def test_a_storm_of_200_progress_updates_in_2_seconds_is_a_handful_of_updates() -> None:
    clock = ManualClock()
    async with adapter_on_fake(clock) as (fake, adapter):
        ts = await adapter.deliver(Outbound(ROOM, "⏳ owner is working: starting", persona="owner"))
        assert ts is not None
        sent_at: list[float] = []
        send = adapter.pacer._send

        async def timed(message: Outbound) -> None:
            sent_at.append(clock.now())
            await send(message)

        adapter.pacer._send = timed
        for step in range(200):
            await adapter.deliver(Outbound(ROOM, f"⏳ owner is working: step {step}", edit_of=ts))
            await clock.advance(0.01)
            await asyncio.sleep(0)
        await clock.advance(1.0)
        await adapter.pacer.drain()
        updates = fake.called("chat.update")
        assert 1 <= len(updates) <= 4, len(updates)
        assert fake.messages[ts].text == "⏳ owner is working: step 199"  # the latest won
        # Never two updates of one message within a second of clock time.
        gaps = [b - a for a, b in zip([1000.0, *sent_at], sent_at, strict=False)]
        assert all(gap >= 1.0 - 1e-9 for gap in gaps), gaps


async def test_the_first_edit_after_a_quiet_second_goes_at_once() -> None:
    clock = ManualClock()
    async with adapter_on_fake(clock) as (fake, adapter):
        ts = await adapter.deliver(Outbound(ROOM, "⏳ working", persona="owner"))
        assert ts is not None
        await clock.advance(1.5)
        await adapter.deliver(Outbound(ROOM, "⏳ still working", edit_of=ts))
        assert [c.params["text"] for c in fake.called("chat.update")] == ["⏳ still working"]


async def test_edits_of_different_messages_do_not_wait_for_each_other() -> None:
    clock = ManualClock()
    async with adapter_on_fake(clock) as (fake, adapter):
        first = await adapter.deliver(Outbound(ROOM, "⏳ owner", persona="owner"))
        second = await adapter.deliver(Outbound(ROOM, "⏳ reviewer", persona="reviewer"))
        assert first and second
        await clock.advance(1.0)
        await adapter.deliver(Outbound(ROOM, "owner step", edit_of=first))
        await adapter.deliver(Outbound(ROOM, "reviewer step", edit_of=second))
        assert {c.params["ts"] for c in fake.called("chat.update")} == {first, second}


async def test_an_outbox_edit_waits_for_its_turn_and_replaces_a_waiting_progress_edit() -> None:
    clock = ManualClock()
    async with adapter_on_fake(clock) as (fake, adapter):
        ts = await adapter.deliver(Outbound(ROOM, "card", persona="tribunal", outbox_id=1))
        assert ts is not None
        await adapter.deliver(Outbound(ROOM, "progress that is superseded", edit_of=ts))
        decided = asyncio.create_task(
            adapter.deliver(Outbound(ROOM, "decided", edit_of=ts, outbox_id=2))
        )
        await asyncio.sleep(0)
        assert fake.called("chat.update") == []  # within the second: both wait
        await clock.advance(1.0)
        await decided
        await adapter.pacer.drain()
        assert [c.params["text"] for c in fake.called("chat.update")] == ["decided"]


async def test_a_failed_progress_edit_is_dropped_quietly() -> None:
    clock = ManualClock()
    async with adapter_on_fake(clock, server_error_retries=0) as (fake, adapter):
        ts = await adapter.deliver(Outbound(ROOM, "⏳", persona="owner"))
        assert ts is not None
        await clock.advance(2.0)
        fake.fail("chat.update", status=500, error="internal_error")
        await adapter.deliver(Outbound(ROOM, "⏳ step", edit_of=ts))  # does not raise
        await clock.advance(2.0)
        await adapter.deliver(Outbound(ROOM, "⏳ next step", edit_of=ts))
        assert fake.messages[ts].text == "⏳ next step"


async def test_a_progress_messages_final_edit_is_not_coalesced_away_by_a_stop() -> None:
    """Issue 27 item 11: the arbiter's message said "working" after its ruling. Its final edit
    came within a second of the last one, waited in the pacer as best effort, and a stop (or
    anything that cancelled the waiting edits) dropped it. A final edit waits its turn and goes."""
    clock = ManualClock()
    async with adapter_on_fake(clock) as (fake, adapter):
        ts = await adapter.deliver(
            Outbound(ROOM, "⏳ arbiter is working (turn 3): reading", persona="arbiter")
        )
        assert ts is not None
        final = Outbound(
            ROOM, "arbiter finished (turn 3, 1 steps)", persona="arbiter", edit_of=ts, final=True
        )
        sending = asyncio.create_task(adapter.deliver(final))
        for _ in range(3):
            await asyncio.sleep(0)
        await adapter.pacer.close()  # what a stop does to the edits still waiting
        await clock.advance(1.0)
        await sending
        assert fake.messages[ts].text == "arbiter finished (turn 3, 1 steps)"
