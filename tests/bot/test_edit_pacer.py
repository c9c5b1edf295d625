"""EditPacer (bot/edit_pacer.py), the one pacer of both platforms: at most one edit of a message
per interval, the latest text winning; progress edits never wait; an edit from the outbox, and a
progress message's final edit, is never dropped and raises. The Slack adapter's pacing through a
fake Slack is in tests/bot/slack/test_edits.py."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.edit_pacer import EditPacer
from rooms.base.model import Outbound, RoomRef
from tests.bot.slack.kit import ManualClock

ROOM = RoomRef("discord", "1", "2")


def edit(text: str, *, outbox_id: int = 0, of: str = "b:9", final: bool = False) -> Outbound:
    return Outbound(ROOM, text, edit_of=of, outbox_id=outbox_id, final=final)


class Recorder:
    def __init__(self, fail: bool = False) -> None:
        self.sent: list[str] = []
        self.fail = fail

    async def __call__(self, message: Outbound) -> None:
        if self.fail:
            raise ConnectionError("down")
        self.sent.append(message.text)


@settings(deadline=None, max_examples=15)
@given(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=30))
def test_a_burst_of_progress_edits_sends_the_first_and_the_last(texts: list[str]) -> None:
    async def run() -> list[str]:
        sent = Recorder()
        pacer = EditPacer(sent, interval=0.05)
        for text in texts:
            await pacer.edit(edit(text))
        await pacer.drain()
        return sent.sent

    sent = asyncio.run(run())
    assert sent[0] == texts[0] and sent[-1] == texts[-1]
    assert len(sent) <= 2


async def test_edits_of_two_messages_do_not_hold_each_other_up() -> None:
    sent = Recorder()
    pacer = EditPacer(sent, interval=10.0)
    await pacer.edit(edit("a1", of="b:1"))
    await pacer.edit(edit("b1", of="b:2"))
    assert sent.sent == ["a1", "b1"]
    await pacer.close()


async def test_an_outbox_edit_waits_its_turn_supersedes_progress_and_raises() -> None:
    sent = Recorder()
    pacer = EditPacer(sent, interval=0.1)
    await pacer.edit(edit("progress 1"))
    await pacer.edit(edit("progress 2"))  # waits for the interval
    await asyncio.sleep(0.01)  # its flusher is sleeping now
    await pacer.edit(edit("decided", outbox_id=7))  # waits too, and replaces progress 2
    await pacer.drain()
    assert sent.sent == ["progress 1", "decided"]
    failing = EditPacer(Recorder(fail=True), interval=0.0)
    await failing.edit(edit("progress"))  # best effort: logged, not raised
    with pytest.raises(ConnectionError):
        await failing.edit(edit("decided", outbox_id=8))


async def test_a_message_just_posted_waits_before_its_first_edit() -> None:
    sent = Recorder()
    pacer = EditPacer(sent, interval=0.1)
    pacer.posted("1", "b:9")
    await pacer.edit(edit("first edit"))
    assert sent.sent == []
    await pacer.drain()
    assert sent.sent == ["first edit"]


async def test_a_final_edit_waits_its_turn_and_survives_a_close() -> None:
    """A progress message's last edit is not best effort: closing the pacer (what a stop does)
    cancels the waiting progress edit it replaced, not the final one."""
    clock = ManualClock()
    sent = Recorder()
    pacer = EditPacer(sent, clock, interval=1.0)
    pacer.posted("1", "b:9")
    await pacer.edit(edit("⏳ step 1"))  # within the interval: waits
    final = asyncio.create_task(pacer.edit(edit("finished", final=True)))
    for _ in range(3):
        await asyncio.sleep(0)
    await pacer.close()
    await clock.advance(1.0)
    await final
    assert sent.sent == ["finished"]


async def test_edits_of_the_same_id_in_two_channels_are_paced_apart() -> None:
    sent = Recorder()
    pacer = EditPacer(sent, ManualClock(), interval=1.0)
    pacer.posted("1", "b:9")  # channel 1's message; channel 2's message of the same id is not
    await pacer.edit(Outbound(RoomRef("slack", "2", "t"), "other channel", edit_of="b:9"))
    assert sent.sent == ["other channel"]
    await pacer.close()
