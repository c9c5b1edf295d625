"""How messages look in Discord (bot/discord/look.py) and how long texts are laid out
(bot/render.long_text_parts, whose properties tests/bot/test_render.py checks for every
platform's limits): tables for the rules."""

from __future__ import annotations

import pytest

from bot.discord.buttons import TEMPLATE, custom_id, decision_view
from bot.discord.look import (
    card_embed,
    is_card,
    labelled,
    named,
    parts,
    persona,
)
from rooms.base.model import Action, Card, GroupPolicy, Outbound, RoomRef, Task
from rooms.base.records import Escalation
from rooms.core.cards import decided_card
from rooms.core.escalations import ask
from rooms.resolve.protocol import RESOLVE

ROOM = RoomRef("discord", "1", "2")
BUTTONS = (Action("approve", "Approve", "7", "primary"), Action("reject", "Reject", "7", "danger"))
RESOLVE_TASK = Task(
    id=7,
    room=ROOM.key,
    group="g",
    text="t",
    status="waiting_human",
    version=1,
    created_at=0.0,
    updated_at=0.0,
    protocol="resolve",
)


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
    ("kind", "text", "by", "shown"),
    [
        ("approve", "", "1100000000000000003", "✅ Approved by <@1100000000000000003>"),
        ("reject", "", "1100000000000000003", "❌ Rejected by <@1100000000000000003>"),
        ("answer", "use the vault", "alice", "💬 Answered by alice"),
    ],
)
def test_a_decided_card_says_who_decided_what_and_when(
    kind: str, text: str, by: str, shown: str
) -> None:
    """The engine's decided card (rooms/cards.decided_card), as it is drawn over the question's
    card: who, what (the question, its options, an answer) and when; no buttons to draw."""
    escalation = Escalation(7, 1, "ruling", "May it?", ("yes", "no"), "why", "open", None, None, 0)
    card = decided_card(escalation, user=by, kind=kind, text=text, at=1_700_000_000.0)
    embed, too_long = card_embed(Outbound(ROOM, "x", card=card))
    assert embed.description is not None and embed.title is not None and not too_long
    assert shown in f"{embed.title}\n{embed.description}"
    assert embed.footer.text is not None and "2023-11-14 22:13 UTC" in embed.footer.text
    assert "1. yes" in embed.description and "May it?" in embed.description
    assert (text in embed.description) if text else "Answer" not in embed.description


def test_buttons_carry_the_escalation_in_the_custom_id() -> None:
    view = decision_view(BUTTONS)
    assert view is not None
    ids = [item.custom_id for item in view.children]  # type: ignore[attr-defined]
    assert ids == ["tribunal:approve:7", "tribunal:reject:7"]
    assert all(TEMPLATE.fullmatch(i) for i in ids)
    assert decision_view((Action("approve", "Approve", "7; drop"),)) is None
    assert decision_view(()) is None
    assert TEMPLATE.fullmatch(custom_id("approve", "1" * 19)) is None  # beyond 18 digits


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


def test_a_resolve_escalation_embed_says_every_answer_closes_it() -> None:
    """The footer is the protocol's words (rooms.core.escalations.wording): no owner in a
    resolve."""
    draft = ask(
        RESOLVE_TASK,
        ROOM,
        GroupPolicy(name="g"),
        table=RESOLVE.table,
        kind="resolve",
        question="Which position?",
        reason="no winner",
    )
    out = draft.post(7)
    embed, _ = card_embed(Outbound(ROOM, out.text, persona="tribunal", card=out.card))
    assert embed.footer.text is not None
    assert embed.footer.text.startswith("Approve accepts the outcome as it stands and closes")
    assert "Nothing more runs in this resolve." in embed.footer.text
    assert "owner" not in embed.footer.text
