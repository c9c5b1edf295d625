"""How messages look in Discord (bot/discord/look.py) and how long texts are laid out
(bot/render.long_text_parts): tables for the rules, properties for the splitter."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.discord.buttons import TEMPLATE, custom_id, decision_view
from bot.discord.look import (
    CONTENT_LIMIT,
    MAX_PARTS,
    card_embed,
    decided_embed,
    is_card,
    labelled,
    named,
    parts,
    persona,
    who,
)
from bot.render import long_text_parts
from rooms.model import Action, Card, Outbound, RoomRef
from rooms.records import Escalation

ROOM = RoomRef("discord", "1", "2")
BUTTONS = (Action("approve", "Approve", "7", "primary"), Action("reject", "Reject", "7", "danger"))


@pytest.mark.parametrize(
    ("message", "card"),
    [
        (Outbound(ROOM, "⚖️ Ruling: PROCEED\nfine", persona="arbiter"), True),
        # An owner cannot make its text a ruling card by how it starts.
        (Outbound(ROOM, "⚖️ Ruling: PROCEED\nfine", persona="owner"), False),
        (Outbound(ROOM, "❓ Task #1 needs a decision", actions=BUTTONS), True),
        (Outbound(ROOM, "plain", card=Card("summary", "Done")), True),
        (Outbound(ROOM, "📋 Task opened"), False),
    ],
)
def test_which_messages_are_cards(message: Outbound, card: bool) -> None:
    assert is_card(message) is card


@pytest.mark.parametrize(
    ("role", "name"),
    [
        ("owner", "Tribunal · owner"),
        ("reviewer", "Tribunal · reviewer"),
        ("arbiter", "Tribunal · arbiter"),
        ("tribunal", "Tribunal"),
        ("expert", "Tribunal · expert"),
    ],
)
def test_personas_have_a_name_a_colour_and_an_avatar(role: str, name: str) -> None:
    who_ = persona(role)
    assert who_.name == name and len(who_.name) <= 80
    assert who_.avatar_url.startswith("https://cdn.discordapp.com/")
    assert "discord" not in who_.name.lower()  # Discord refuses such webhook names


def test_the_personas_are_told_apart_by_colour() -> None:
    colours = {persona(r).colour for r in ("owner", "reviewer", "arbiter", "tribunal")}
    assert len(colours) == 4


def test_a_labelled_embed_names_the_role() -> None:
    embed = labelled(Outbound(ROOM, "I did it", persona="reviewer"), "I did it")
    assert embed.author.name == "🔍 Tribunal · reviewer" and embed.description == "I did it"


def test_an_escalation_card_with_a_long_text_says_so() -> None:
    message = Outbound(ROOM, "❓ needs a decision\n" + "why " * 2000, actions=BUTTONS)
    embed, too_long = card_embed(message)
    assert too_long and embed.description is not None and len(embed.description) <= 4096
    assert embed.title == "❓ needs a decision"


def test_a_structured_card_draws_its_sections_and_record() -> None:
    card = Card("ruling", "Ruling: REVISE", (("Reasons", "tests fail"),), "f", "/r/1.md")
    embed, too_long = card_embed(Outbound(ROOM, "x", persona="arbiter", card=card))
    assert not too_long and embed.title == "Ruling: REVISE"
    assert embed.description == "**Reasons**\ntests fail"
    assert embed.footer.text is not None and "/r/1.md" in embed.footer.text


@pytest.mark.parametrize(
    ("answer", "by", "shown"),
    [
        ("approve", "1100000000000000003", "✅ Approved by <@1100000000000000003>"),
        ("reject", "1100000000000000003", "❌ Rejected by <@1100000000000000003>"),
        ("use the vault", "alice", "💬 Answered by alice"),
    ],
)
def test_a_decided_card_says_who_decided_what_and_when(answer: str, by: str, shown: str) -> None:
    escalation = Escalation(
        7, 1, "ruling", "May it?", ("yes", "no"), "why", "answered", answer, by, 0.0
    )
    embed = decided_embed(escalation, 1_700_000_000.0)
    assert embed.description is not None
    assert shown in embed.description and "<t:1700000000:f>" in embed.description
    assert embed.footer.text is not None and "2023-11-14 22:13 UTC" in embed.footer.text
    assert "1. yes" in embed.description


def test_who_mentions_only_discord_ids() -> None:
    assert who("1100000000000000003") == "<@1100000000000000003>"
    assert who("<@&1>") == "<@&1>" and who(None) == "someone"


def test_buttons_carry_the_escalation_in_the_custom_id() -> None:
    view = decision_view(BUTTONS)
    assert view is not None
    ids = [item.custom_id for item in view.children]  # type: ignore[attr-defined]
    assert ids == ["tribunal:approve:7", "tribunal:reject:7"]
    assert all(TEMPLATE.fullmatch(i) for i in ids)
    assert decision_view((Action("approve", "Approve", "7; drop"),)) is None
    assert decision_view(()) is None
    assert TEMPLATE.fullmatch(custom_id("approve", "1" * 19)) is None  # beyond 18 digits


@given(st.text(alphabet=st.sampled_from("ab c\n`~"), max_size=12_000))
def test_long_text_parts_fit_and_lose_nothing_of_plain_text(text: str) -> None:
    pieces, attach = long_text_parts(text, CONTENT_LIMIT, MAX_PARTS)
    assert all(len(p) <= CONTENT_LIMIT for p in pieces)
    if attach:
        assert len(pieces) == 1 and "characters in all" in pieces[0]
    else:
        assert len(pieces) <= MAX_PARTS
        if "```" not in text and "~~~" not in text and text:
            assert "".join(pieces) == text


def test_parts_of_the_sizes_the_issue_names() -> None:
    five = "\n".join("y" * 99 for _ in range(50))  # 4,999 characters
    pieces, attach = parts(five)
    assert not attach and len(pieces) == 3 and "".join(pieces) == five
    pieces, attach = parts("z" * 50_000)
    assert attach and len(pieces) == 1 and pieces[0].startswith("z" * 1000)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("1100000000000000003 approved", "<@1100000000000000003> approved"),
        (
            "only approvers: 1100000000000000003, 1250000000000000002",
            "only approvers: <@1100000000000000003>, <@&1250000000000000002>",
        ),
        ("already <@1100000000000000003>", "already <@1100000000000000003>"),
        ("task #12 and 123456", "task #12 and 123456"),  # short numbers are not ids
        ("x" + "1" * 25, "x" + "1" * 25),  # nor longer ones
    ],
)
def test_named_turns_ids_into_mentions(text: str, shown: str) -> None:
    assert named(text, frozenset({"1250000000000000002"})) == shown


@pytest.mark.parametrize(
    ("known", "title"),
    [(True, "✅ Approved by alice"), (False, "✅ Approved")],
)
def test_a_decided_card_from_the_engine_names_who_decided(known: bool, title: str) -> None:
    card = Card(
        "decided",
        "✅ Approved by 1100000000000000003",
        (("Question", "May it?"),),
        "Decided by 1100000000000000003 at 2026-12-02 01:00 UTC.",
    )
    names = {"1100000000000000003": "alice"} if known else {}
    embed, _ = card_embed(Outbound(ROOM, "x", card=card), lambda i: names.get(i, i))
    assert embed.title == title  # titles show no mentions: a name, or none
    assert embed.description is not None
    assert embed.description.startswith("✅ Approved by <@1100000000000000003>")
    assert embed.footer.text is not None
    assert embed.footer.text.startswith("Decided by alice" if known else "Decided by 1100")
    assert embed.colour is not None and embed.colour.value == 0x2ECC71
