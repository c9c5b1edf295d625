"""A row handed again after a restart is recognised in Slack by the outbox id in its metadata:
nothing is posted twice, what is missing is posted, and nobody else's message can pass for ours.
Each "restart" here is a fresh adapter (no memory) against the same fake Slack."""

from __future__ import annotations

from dataclasses import replace

import pytest
from slack_sdk.errors import SlackApiError

from bot.slack.blocks import pieces
from bot.slack.posting import METADATA_EVENT
from rooms.base.model import Action, Outbound, RoomRef
from tests.bot.slack.kit import adapter_on_fake
from tests.bot.slack.test_delivery import long_output
from tests.fakes.slack_api import BOT_TOKEN, FakeSlack, Message

ROOM = RoomRef("slack", "C1", "1690000001.000200")


async def fresh_adapter_delivers(fake: FakeSlack, message: Outbound) -> tuple[str | None, int]:
    """Deliver with a new adapter (a restarted process); returns its result and lookups."""
    from bot.slack.adapter import SlackAdapter, make_client

    adapter = SlackAdapter(
        make_client(BOT_TOKEN, fake.api_url, backoff_s=0.0), mode="socket", app_token="xapp-1"
    )
    adapter.poster.own = frozenset({"UBOT", "BBOT"})
    try:
        return await adapter.deliver(message), adapter.poster.lookups
    finally:
        await adapter.stop()


async def test_a_first_delivery_posts_with_metadata_and_reads_nothing_back() -> None:
    async with adapter_on_fake() as (fake, adapter):
        ts = await adapter.deliver(Outbound(ROOM, "hello", outbox_id=11))
        assert ts is not None
        assert fake.messages[ts].metadata == {
            "event_type": METADATA_EVENT,
            "event_payload": {"outbox_id": 11, "piece": 0},
        }
        assert adapter.poster.lookups == 0 and fake.called("conversations.replies") == []


async def test_a_repeat_after_a_restart_is_found_and_not_posted_again() -> None:
    async with adapter_on_fake() as (fake, adapter):
        first = Outbound(ROOM, "the owner's turn", persona="owner", outbox_id=12)
        ts = await adapter.deliver(first)
        delivered, lookups = await fresh_adapter_delivers(fake, replace(first, attempt=2))
        assert (delivered, lookups) == (ts, 1)
        assert [m.text for m in fake.messages.values()] == ["the owner's turn"]


async def test_a_repeat_of_a_row_never_posted_posts_it() -> None:
    async with adapter_on_fake() as (fake, _):
        fake.roots.add(ROOM.thread)  # the person's message that opened the task
        message = Outbound(ROOM, "lost before Slack saw it", outbox_id=13, attempt=2)
        delivered, lookups = await fresh_adapter_delivers(fake, message)
        assert lookups == 1
        [post] = fake.messages.values()
        assert post.ts == delivered and post.text == "lost before Slack saw it"


async def test_a_repeat_posts_only_the_pieces_and_the_file_still_missing() -> None:
    text = long_output(3000 * 3 - 300)
    parts = pieces(text)
    async with adapter_on_fake(server_error_retries=0) as (fake, adapter):
        fake.fail("chat.postMessage", status=500, skip=1, times=1, error="internal_error")
        with pytest.raises(SlackApiError):  # the process "dies" after the first piece
            await adapter.deliver(Outbound(ROOM, text, outbox_id=14))
        assert len(fake.messages) == 1
        delivered, _ = await fresh_adapter_delivers(
            fake, Outbound(ROOM, text, outbox_id=14, attempt=2)
        )
        posts = list(fake.messages.values())
        assert [p.ts for p in posts][0] == delivered
        assert len(posts) == len(parts) and len({p.text for p in posts}) == len(parts)

        long = long_output(30_000)
        message = Outbound(ROOM, long, persona="reviewer", outbox_id=15)
        fake.fail("files.getUploadURLExternal", status=500, times=1, error="internal_error")
        with pytest.raises(SlackApiError):  # the opening part is in Slack, the file is not
            await adapter.deliver(message)
        assert fake.files == []
        again, _ = await fresh_adapter_delivers(fake, replace(message, attempt=2))
        assert len(fake.files) == 1 and fake.files[0]["content"] == long
        heads = [m for m in fake.messages.values() if "characters in all" in m.text]
        assert len(heads) == 1 and heads[0].ts == again
        # Once more: the file is found too, nothing new.
        count = len(fake.messages)
        await fresh_adapter_delivers(fake, replace(message, attempt=3))
        assert len(fake.messages) == count and len(fake.files) == 1


async def test_another_apps_message_with_our_metadata_does_not_stop_a_post() -> None:
    async with adapter_on_fake() as (fake, _):
        fake.messages["1690000002.000100"] = Message(
            channel="C1",
            ts="1690000002.000100",
            thread_ts=ROOM.thread,
            text="forged",
            blocks=[],
            username="Tribunal",
            icon_emoji=None,
            metadata={"event_type": METADATA_EVENT, "event_payload": {"outbox_id": 16}},
            user="UOTHER",
            bot_id="BOTHER",
        )
        delivered, _ = await fresh_adapter_delivers(
            fake, Outbound(ROOM, "real", outbox_id=16, attempt=2)
        )
        assert delivered != "1690000002.000100"
        assert fake.messages[str(delivered)].text == "real"


async def test_the_card_of_an_escalation_is_found_in_its_thread_after_a_restart() -> None:
    buttons = (Action("approve", "Approve", "7", "primary"), Action("reject", "Reject", "7"))
    async with adapter_on_fake() as (fake, adapter):
        ts = await adapter.deliver(Outbound(ROOM, "decide", actions=buttons, outbox_id=17))
        assert fake.messages[str(ts)].metadata["event_payload"]["escalation"] == "7"  # type: ignore[index]
        from bot.slack.adapter import SlackAdapter, make_client

        restarted = SlackAdapter(
            make_client(BOT_TOKEN, fake.api_url), mode="socket", app_token="xapp-1"
        )
        assert await restarted.poster.card_of("C1", ROOM.thread, 7) == ts
        assert await restarted.poster.card_of("C1", ROOM.thread, 8) is None
        await restarted.stop()
