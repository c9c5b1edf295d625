"""Who decides, and what everyone else sees: approvers by user id or by role decide with a
button or a reply in the thread; anyone else gets an ephemeral refusal; stale, double and
tampered clicks change nothing; roles speak in labelled embeds when the bot may not manage
webhooks. Real discord.py against the fake Discord; real engine and store; scripted runner."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from bot.settings import Settings
from rooms.base.model import Outbound
from tests.bot.discord.kit import (
    assert_one_decision_card,
    ephemeral_followups,
    open_escalation,
    said_chose,
    served,
    text_of,
)
from tests.bot.discord.test_flow import pair_with_escalation
from tests.fakes.discord import ALICE, BOB, BOT_ID, CAROL, FakeDiscord
from tests.fakes.runner import Reply, ScriptedRunner


def card_edits(fake: FakeDiscord, card: str) -> int:
    return sum(1 for c in fake.calls if c.method == "PATCH" and c.message_id == card)


async def test_a_non_approver_gets_an_ephemeral_refusal_and_nothing_changes(
    settings: Settings, fake: FakeDiscord
) -> None:
    async with served(settings, fake, pair_with_escalation()) as s:
        thread, card = await open_escalation(s)
        before = len(fake.in_channel(thread))
        await fake.click(card, "tribunal:choose:1.1", BOB)
        await s.until(lambda: ephemeral_followups(fake))
        await s.settle()
        (refusal,) = ephemeral_followups(fake)
        assert "only approvers can answer" in refusal
        assert (await s.task()).status == "waiting_human"
        assert fake.messages[card]["components"], "the card keeps its buttons"
        assert card_edits(fake, card) == 0
        assert len(fake.in_channel(thread)) == before, "nothing posted for everyone to see"


async def test_a_double_click_decides_once_and_the_second_is_stale(
    settings: Settings, fake: FakeDiscord
) -> None:
    async with served(settings, fake, pair_with_escalation()) as s:
        thread, card = await open_escalation(s)
        shown = copy.deepcopy(fake.messages[card])
        await fake.click(card, "tribunal:choose:1.1", ALICE)
        await fake.click(card, "tribunal:choose:1.1", ALICE)  # before the card was edited
        await s.until(lambda: ephemeral_followups(fake))
        await s.settle()
        assert (await s.task()).status == "closed"
        (stale,) = ephemeral_followups(fake)
        assert "is stale" in stale and "Nothing was changed" in stale
        assert card_edits(fake, card) == 1
        approvals = [m for m in fake.in_channel(thread) if m["id"] != card and said_chose(m, ALICE)]
        assert len(approvals) == 1
        assert not approvals[0]["embeds"], "the reply is text: the card is the question's"
        assert_one_decision_card(fake, thread, card, f"Chosen by <@{ALICE}>")
        # A click on the decided card later (a client that still shows the buttons): stale too.
        await fake.click(card, "tribunal:reject:1", ALICE, seen=shown)
        await s.until(lambda: len(ephemeral_followups(fake)) == 2)
        await s.settle()
        assert (await s.task()).status == "closed" and card_edits(fake, card) == 1


async def test_a_tampered_button_is_stale(settings: Settings, fake: FakeDiscord) -> None:
    def forged(custom_id: str) -> dict[str, Any]:
        """The card as a tampered client would send it back, its button's id replaced."""
        message = copy.deepcopy(fake.messages[card])
        message["components"][0]["components"][0]["custom_id"] = custom_id
        return message

    async with served(settings, fake, pair_with_escalation()) as s:
        _, card = await open_escalation(s)
        await fake.click(
            card, "tribunal:approve:999999", ALICE, seen=forged("tribunal:approve:999999")
        )
        await s.until(lambda: ephemeral_followups(fake))
        await s.settle()
        assert "escalation #999999) is stale" in ephemeral_followups(fake)[0]
        assert (await s.task()).status == "waiting_human"
        assert card_edits(fake, card) == 0
        # Not our template at all: discord.py finds no item, nothing reaches the engine.
        odd = "tribunal:approve:1; drop table"
        await fake.click(card, odd, ALICE, seen=forged(odd))
        await asyncio.sleep(0.2)
        await s.settle()
        assert (await s.task()).status == "waiting_human" and card_edits(fake, card) == 0
        assert len(ephemeral_followups(fake)) == 1


async def test_an_approver_by_role_decides(settings: Settings, fake: FakeDiscord) -> None:
    async with served(settings, fake, pair_with_escalation()) as s:
        thread, card = await open_escalation(s)
        await fake.click(card, "tribunal:reject:1", CAROL)
        await s.until(lambda: card_edits(fake, card) == 1)
        await s.settle()
        assert (await s.task()).status == "closed"
        assert f"Rejected by <@{CAROL}>" in text_of(fake.messages[card])
        assert_one_decision_card(fake, thread, card, f"Rejected by <@{CAROL}>")
        assert ephemeral_followups(fake) == []


async def test_an_approvers_reply_in_the_thread_answers_like_the_button(
    settings: Settings, fake: FakeDiscord
) -> None:
    runner = pair_with_escalation()
    async with served(settings, fake, runner) as s:
        thread, card = await open_escalation(s)
        await fake.say(BOB, "just use the test password", channel=thread)
        await s.settle()
        assert (await s.task()).status == "waiting_human", "bob may not answer"
        refusal = [m for m in fake.in_channel(thread) if "only approvers" in text_of(m)]
        assert refusal and refusal[0]["author"]["id"] == str(BOT_ID)
        await fake.say(ALICE, "use the test password from the vault", channel=thread)
        await s.until(lambda: card_edits(fake, card) == 1)
        await s.settle()
        assert (await s.task()).status == "closed"
        decided = text_of(fake.messages[card])
        assert f"Answered by <@{ALICE}>" in decided and "from the vault" in decided
        assert fake.messages[card]["components"] == []
        assert_one_decision_card(fake, thread, card, f"Answered by <@{ALICE}>")
        assert "use the test password from the vault" in runner.calls[2].prompt


async def test_without_manage_webhooks_roles_speak_in_labelled_embeds(
    settings: Settings, fake: FakeDiscord
) -> None:
    fake.webhooks_allowed = False
    runner = ScriptedRunner(
        {
            "owner": [Reply("DONE\nadded the parser", progress=("reading",)), "DONE\nwrapped up"],
            "reviewer": ["APPROVED\nlooks right"],
        }
    )
    async with served(settings, fake, runner) as s:
        mention = await fake.say(ALICE, "write a parser", mention=True)
        await s.until(lambda: s.app.store.task(1))
        await s.settle()
        assert (await s.task()).status == "closed"
        assert await s.adapter.mode(str(mention["channel_id"])) == "embeds"
        posts = fake.in_channel(str(mention["id"]))
        assert not any(m.get("webhook_id") for m in posts)
        roles = [m for m in posts if m["embeds"] and m["author"]["id"] == str(BOT_ID)]
        authors = [m["embeds"][0]["author"]["name"] for m in roles]
        assert "🛠️ Tribunal · owner" in authors and "🔍 Tribunal · reviewer" in authors
        owner = next(m for m in roles if m["embeds"][0]["description"].startswith("DONE\nadded"))
        assert owner["embeds"][0]["color"] == 0x2ECC71
        assert owner["embeds"][0]["author"]["name"] == "🛠️ Tribunal · owner"
        assert not any(c.path.endswith("/webhooks") and c.method == "POST" for c in fake.calls)
        # Progress is a labelled embed too, edited in place as one, removed when the turn ended.
        progress = next(
            m
            for m in fake.deleted
            if m["embeds"] and m["embeds"][0]["description"].startswith("⏳ owner is working")
        )
        assert progress["embeds"][0]["author"]["name"] == "🛠️ Tribunal · owner"


async def test_choose_by_mention_in_the_thread_decides_and_edits_the_card(
    settings: Settings, fake: FakeDiscord
) -> None:
    async with served(settings, fake, pair_with_escalation()) as s:
        thread, card = await open_escalation(s)
        await fake.say(BOB, "choose 1", mention=True, channel=thread)
        await s.settle()
        assert (await s.task()).status == "waiting_human" and card_edits(fake, card) == 0
        # The question offers options: `approve` picks none and is refused (issue 26).
        await fake.say(CAROL, "approve", mention=True, channel=thread)
        await s.settle()
        assert (await s.task()).status == "waiting_human" and card_edits(fake, card) == 0
        await fake.say(CAROL, "choose 1", mention=True, channel=thread)
        await s.until(lambda: card_edits(fake, card) == 1)
        await s.settle()
        assert (await s.task()).status == "closed"
        assert f"Chosen by <@{CAROL}>" in text_of(fake.messages[card])
        assert_one_decision_card(fake, thread, card, f"Chosen by <@{CAROL}>")


async def test_a_click_is_acknowledged_before_the_engine_works_on_it(
    settings: Settings, fake: FakeDiscord
) -> None:
    async with served(settings, fake, pair_with_escalation()) as s:
        thread, card = await open_escalation(s)
        click = await fake.click(card, "tribunal:choose:1.1", ALICE)
        await s.until(lambda: card_edits(fake, card) == 1)
        await s.settle()
        order = [
            i
            for i, c in enumerate(fake.calls)
            if c.query.get("interaction_id") == click
            or (c.method == "PATCH" and c.message_id == card)
            or "approved; the owner" in str(c.body)
        ]
        kinds = ["callback" if "callback" in fake.calls[i].path else "later" for i in order]
        assert kinds[0] == "callback" and kinds.count("callback") == 1


async def test_when_the_channel_has_no_room_for_our_webhook_roles_speak_in_embeds(
    settings: Settings, fake: FakeDiscord
) -> None:
    fake.webhooks_full = True  # Manage Webhooks, but the channel's 15 webhooks are taken
    runner = ScriptedRunner(
        {"owner": ["DONE\nadded it", "DONE\nwrapped up"], "reviewer": ["APPROVED\nfine"]}
    )
    async with served(settings, fake, runner) as s:
        mention = await fake.say(ALICE, "write a parser", mention=True)
        await s.until(lambda: s.app.store.task(1))
        await s.settle()
        assert (await s.task()).status == "closed"
        assert await s.adapter.mode(str(mention["channel_id"])) == "embeds"
        owner = [
            m
            for m in fake.in_channel(str(mention["id"]))
            if m["embeds"] and m["embeds"][0].get("author", {}).get("name") == "🛠️ Tribunal · owner"
        ]
        assert [m["embeds"][0]["description"] for m in owner] == [
            "DONE\nadded it",
            "DONE\nwrapped up",
        ]


async def test_a_decided_row_handed_again_draws_the_same_card_and_posts_nothing_more(
    settings: Settings, fake: FakeDiscord
) -> None:
    """At-least-once delivery of the decision: handed again in the same process it is known;
    handed again by a restarted one (its mark lost), the card is drawn again the same and the
    reply is not posted twice (the outbox id is the post's enforced nonce)."""
    async with served(settings, fake, pair_with_escalation()) as s:
        thread, card = await open_escalation(s)
        await fake.click(card, "tribunal:choose:1.1", ALICE)
        await s.until(lambda: card_edits(fake, card) == 1)
        await s.settle()
        (row,) = [r for r in await s.app.store.outbox() if r.key == "answer:1"]
        assert row.card is not None and row.card.kind == "decided" and row.message_id
        again = Outbound(
            row.room, row.text, persona=row.persona, card=row.card, outbox_id=row.id, attempt=2
        )
        posts = len(fake.in_channel(thread))
        assert await s.adapter.deliver(again) == row.message_id
        assert card_edits(fake, card) == 1 and len(fake.in_channel(thread)) == posts
        shown = copy.deepcopy(fake.messages[card])
    async with served(settings, fake, ScriptedRunner()) as s:
        assert await s.adapter.deliver(again) == row.message_id  # the same reply, by its nonce
        assert card_edits(fake, card) == 2 and fake.messages[card]["embeds"] == shown["embeds"]
        assert len(fake.in_channel(thread)) == posts
        assert_one_decision_card(fake, thread, card, f"Chosen by <@{ALICE}>")
