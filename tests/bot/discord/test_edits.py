"""EditPacer (bot/discord/edits.py): at most one edit of a message per interval, the latest text
winning; progress edits never wait; an edit from the outbox is never dropped and raises."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.discord.edits import EditPacer
from rooms.base.model import Outbound, RoomRef

ROOM = RoomRef("discord", "1", "2")


def edit(text: str, *, outbox_id: int = 0, of: str = "b:9") -> Outbound:
    return Outbound(ROOM, text, edit_of=of, outbox_id=outbox_id)


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
    pacer.posted("b:9")
    await pacer.edit(edit("first edit"))
    assert sent.sent == []
    await pacer.drain()
    assert sent.sent == ["first edit"]
