"""Outbound messages in Slack: pieces and files, ephemeral replies, cards updated in place,
rate limits and server errors, and no double post when the outbox hands a message again."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError

from bot.render import open_fence
from bot.slack.blocks import MAX_PIECES, PIECE_LIMIT, pieces
from rooms.base.model import Action, Card, Outbound, RoomRef
from tests.bot.slack.kit import adapter_on_fake, slack_kit
from tests.fakes.runner import Reply

ROOM = RoomRef("slack", "C1", "1690000001.000200")


def long_output(chars: int) -> str:
    """Agent output with prose and code fences, at least `chars` long (whole lines, fences
    closed), no characters Slack escapes."""
    lines: list[str] = []
    n = 0
    while sum(len(x) + 1 for x in lines) < chars:
        n += 1
        if n % 7 == 0:
            lines += [
                "```python",
                *(f"    value_{n}_{i} = compute({i})  # step" for i in range(30)),
                "```",
            ]
        else:
            lines.append(f"Line {n}: the reviewer checked module {n} and found nothing new to say.")
    return "\n".join(lines)


async def test_a_30000_character_output_is_an_opening_part_plus_the_whole_text_as_a_file() -> None:
    text = long_output(30_000)
    async with adapter_on_fake() as (fake, adapter):
        ts = await adapter.deliver(Outbound(ROOM, text, persona="reviewer", outbox_id=7))
        [post, shared] = fake.messages.values()  # the opening part, then the file in the thread
        assert shared.files and shared.thread_ts == ROOM.thread
        assert ts == post.ts and post.thread_ts == ROOM.thread
        assert post.username == "Tribunal · reviewer"
        assert len(post.text) < PIECE_LIMIT + 200
        assert (
            open_fence(post.text.split("\n\n_(…")[0]) is None
        )  # the opening part closes its fence
        assert f"{len(text):,} characters in all" in post.text
        [upload] = fake.files
        assert upload["content"] == text  # nothing cut off
        assert (upload["channel"], upload["thread_ts"]) == ("C1", ROOM.thread)
        # Handed again by the outbox (say the mark was lost): nothing new in Slack.
        assert await adapter.deliver(Outbound(ROOM, text, persona="reviewer", outbox_id=7)) == ts
        assert len(fake.messages) == 2 and len(fake.files) == 1


async def test_a_few_pieces_are_posted_in_order_on_line_and_fence_boundaries() -> None:
    text = long_output(PIECE_LIMIT * MAX_PIECES - 1000)
    async with adapter_on_fake() as (fake, adapter):
        ts = await adapter.deliver(Outbound(ROOM, text, persona="owner", outbox_id=3))
        posts = list(fake.messages.values())
        assert 2 <= len(posts) <= MAX_PIECES and posts[0].ts == ts
        assert fake.files == []
        for post in posts:
            assert len(post.text) <= PIECE_LIMIT
            assert open_fence(post.text) is None  # every piece renders on its own
            assert post.username == "Tribunal · owner"

        # Every line is there once, in order; only the fences closed and reopened are added.
        def content(t: str) -> list[str]:
            return [line for line in t.splitlines() if not line.startswith("```")]

        assert content("\n".join(p.text for p in posts)) == content(text)


async def test_a_failure_between_pieces_resumes_at_the_next_piece() -> None:
    text = long_output(PIECE_LIMIT * 3 - 300)
    async with adapter_on_fake(server_error_retries=0) as (fake, adapter):
        # The second post fails with a server error: deliver raises, the outbox will retry.
        fake.fail("chat.postMessage", status=500, skip=1, times=1, error="internal_error")
        with pytest.raises(SlackApiError):
            await adapter.deliver(Outbound(ROOM, text, outbox_id=9))
        [first] = fake.messages.values()
        ts = await adapter.deliver(Outbound(ROOM, text, outbox_id=9))
        posts = list(fake.messages.values())
        assert posts[0] is first and first.ts == ts
        assert len(posts) == len(pieces(text)) >= 3  # each piece once
        assert len({p.text for p in posts}) == len(posts)


async def test_rate_limits_and_server_errors_are_retried_and_nothing_is_doubled() -> None:
    async with adapter_on_fake() as (fake, adapter):
        fake.fail("chat.postMessage", status=429, retry_after=0, times=2)
        await adapter.deliver(Outbound(ROOM, "first", outbox_id=1))
        fake.fail("chat.postMessage", status=500, times=1, error="internal_error")
        fake.fail("chat.postMessage", status=503, times=1, error="service_unavailable")
        await adapter.deliver(Outbound(ROOM, "second", outbox_id=2))
        assert [m.text for m in fake.messages.values()] == ["first", "second"]
        assert len(fake.called("chat.postMessage")) == 2 + 1 + 2 + 1


async def test_an_error_slack_keeps_answering_raises_for_the_outbox() -> None:
    async with adapter_on_fake(rate_limit_retries=1) as (fake, adapter):
        fake.fail("chat.postMessage", status=429, retry_after=0, times=2)  # 1 try + 1 retry
        with pytest.raises(SlackApiError):
            await adapter.deliver(Outbound(ROOM, "hello", outbox_id=1))
        fake.fail("chat.postMessage", status=200, times=1, error="channel_not_found")
        with pytest.raises(SlackApiError, match="channel_not_found"):
            await adapter.deliver(Outbound(ROOM, "hello", outbox_id=1))
        assert fake.messages == {}


async def test_the_outbox_retries_what_slack_refused_and_posts_it_once(tmp_path: Path) -> None:
    async with slack_kit(tmp_path, {"owner": [Reply(text="DONE", hang=True)]}) as kit:
        # More 429s and 500s than slack_sdk retries in one call: the outbox takes over.
        kit.fake.fail("chat.postMessage", status=429, retry_after=0, times=5)
        kit.fake.fail("chat.postMessage", status=500, times=4, error="internal_error")
        thread = await kit.mention("fix the flaky test")
        await kit.runner.wait_calls(1)
        await kit.adapter.drain()
        async with asyncio.timeout(30):
            await kit.engine.outbox.flush()
        opened = [m for m in kit.thread(thread) if "Task opened" in m.text]
        assert len(opened) == 1
        [row] = await kit.store.outbox()
        assert row.status == "sent" and row.attempts >= 2  # the outbox did retry
        assert row.message_id == opened[0].ts


async def test_a_reply_for_one_person_is_ephemeral() -> None:
    async with adapter_on_fake() as (fake, adapter):
        message = Outbound(
            ROOM, "mallory: only approvers can answer: boss.", private_to="mallory", outbox_id=4
        )
        delivered = await adapter.deliver(message)
        assert fake.messages == {}
        [ephemeral] = fake.ephemerals
        assert (ephemeral["user"], ephemeral["channel"], ephemeral["thread_ts"]) == (
            "mallory",
            "C1",
            ROOM.thread,
        )
        assert delivered is not None and delivered.startswith("ephemeral:")
        await adapter.deliver(message)  # handed again: not shown twice
        assert len(fake.ephemerals) == 1


ESCALATION = Card(
    kind="escalation",
    title="Task #1 needs a decision",
    sections=(
        ("Question", "May the owner use the **production** key?"),
        ("Options", "1. yes\n2. no"),
    ),
    footer="Only approvers can answer: boss.",
    record_path="/data/decisions/task-1-turn-2.md",
)
BUTTONS = (Action("approve", "Approve", "1", "primary"), Action("reject", "Reject", "1", "danger"))


async def test_an_escalation_card_and_its_decided_card_updated_in_place() -> None:
    async with adapter_on_fake() as (fake, adapter):
        ts = await adapter.deliver(
            Outbound(
                ROOM,
                "plain text version",
                persona="arbiter",
                card=ESCALATION,
                actions=BUTTONS,
                outbox_id=5,
            )
        )
        assert ts is not None
        card = fake.messages[ts]
        assert card.blocks[0] == {
            "type": "header",
            "text": {"type": "plain_text", "text": "Task #1 needs a decision"},
        }
        assert "*Question*\nMay the owner use the *production* key?" in card.shown()
        assert "task-1-turn-2.md" in card.shown()
        assert [b["value"] for b in card.buttons()] == ["1", "1"]
        decided = Card(
            kind="decided",
            title="✅ Approved by boss",
            sections=(("Question", "May the owner use the production key?"),),
            footer="Decided by boss at 2026-12-02 12:00 UTC.",
            ref="1",
        )
        reply = Outbound(ROOM, "boss approved; the owner continues.", card=decided, outbox_id=6)
        await adapter.deliver(reply)
        assert card.buttons() == []  # the buttons are gone
        assert "Approved by boss" in card.shown() and "12:00 UTC" in card.shown()
        [update] = card.updates
        assert update["ts"] == ts and update["channel"] == "C1"
        [posted] = [m for m in fake.messages.values() if m.ts != ts]
        assert posted.text == "boss approved; the owner continues." and not posted.blocks
        # Handed again after a restart: the same card drawn again, the reply not posted again.
        from tests.bot.slack.test_repeat import fresh_adapter_delivers

        await fresh_adapter_delivers(fake, replace(reply, attempt=2))
        assert len(card.updates) == 2 and card.updates[1]["blocks"] == update["blocks"]
        assert len(fake.messages) == 2
        # A decided card for an escalation whose card is nowhere: the reply is still posted.
        other = replace(reply, card=replace(decided, ref="99"), outbox_id=7, text="other")
        await adapter.deliver(other)
        assert len(card.updates) == 2 and any(m.text == "other" for m in fake.messages.values())


async def test_text_from_agents_cannot_ping_or_link() -> None:
    async with adapter_on_fake() as (fake, adapter):
        hostile = (
            "Done <!channel> <@U024BE7LH> <https://evil.example|click> & [ok](javascript:alert(1))"
        )
        await adapter.deliver(Outbound(ROOM, hostile, persona="owner", outbox_id=1))
        [post] = fake.messages.values()
        assert "<!channel>" not in post.text and "<@U024BE7LH>" not in post.text
        assert "&lt;!channel&gt;" in post.text and "&amp;" in post.text
        assert "<https://evil" not in post.text and "<javascript" not in post.text
