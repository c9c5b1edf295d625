"""Block Kit rendering of Outbound messages: personas, cards, buttons, Slack's limits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.slack.blocks import (
    HEADER_LIMIT,
    SECTION_LIMIT,
    card_blocks,
    content_args,
    persona,
    post_args,
)
from rooms.base.model import Action, Card, GroupPolicy, Outbound, RoomRef, Task
from rooms.core.escalations import ask
from rooms.debate.protocol import DEBATE

ROOM = RoomRef("slack", "C1", "5.0")
BUTTONS = (
    Action("approve", "Approve", "12", "primary"),
    Action("reject", "Reject", "12", "danger"),
)


def test_each_role_posts_under_its_persona_in_the_thread() -> None:
    for role, name in [
        ("owner", "Tribunal · owner"),
        ("reviewer", "Tribunal · reviewer"),
        ("arbiter", "Tribunal · arbiter"),
        ("tribunal", "Tribunal"),
    ]:
        args = post_args(Outbound(ROOM, "hi", persona=role), "hi", last=True)
        assert (args["username"], args["channel"], args["thread_ts"]) == (name, "C1", "5.0")
        assert args["icon_emoji"].startswith(":")
    assert persona("expert").username == "Tribunal · expert"


def test_a_message_with_buttons_is_a_section_and_an_actions_block() -> None:
    args = content_args(Outbound(ROOM, "Approve?", actions=BUTTONS), "Approve?")
    section, actions, hint = args["blocks"]
    assert section["text"]["text"] == "Approve?"
    assert [(b["action_id"], b["value"], b["style"]) for b in actions["elements"]] == [
        ("tribunal_approve", "12", "primary"),
        ("tribunal_reject", "12", "danger"),
    ]
    assert "reply in this thread" in hint["elements"][0]["text"]


def test_buttons_go_on_the_last_piece_only() -> None:
    message = Outbound(ROOM, "x", actions=BUTTONS)
    assert "blocks" not in content_args(message, "x", last=False)


RULING = Card(
    kind="ruling",
    title="⚖️ Ruling: REVISE",
    sections=(
        ("Reasons", "The reviewer's **F1** is right."),
        ("Conditions", "- mock the API\n- document it"),
    ),
    footer="Arbitration 1 of 2",
    record_path="/data/decisions/task-1-turn-2.md",
)


def test_a_ruling_card() -> None:
    blocks = card_blocks(RULING)
    assert blocks[0]["type"] == "header" and blocks[0]["text"]["text"] == "⚖️ Ruling: REVISE"
    texts = [b.get("text", {}).get("text", "") for b in blocks]
    assert "*Reasons*\nThe reviewer's *F1* is right." in texts
    assert "*Conditions*\n• mock the API\n• document it" in texts
    contexts = [b["elements"][0]["text"] for b in blocks if b["type"] == "context"]
    assert contexts == [
        "📄 Decision record: `/data/decisions/task-1-turn-2.md`",
        "Arbitration 1 of 2",
    ]
    assert not any(b["type"] == "actions" for b in blocks)


def test_a_card_message_falls_back_to_its_title_for_notifications() -> None:
    args = content_args(Outbound(ROOM, "full text", card=RULING), "full text")
    assert args["text"] == "⚖️ Ruling: REVISE"


@given(
    title=st.text(max_size=400),
    sections=st.lists(st.tuples(st.text(max_size=50), st.text(max_size=5000)), max_size=80),
    label=st.text(min_size=1, max_size=200),
    value=st.text(max_size=3000),
)
def test_cards_stay_within_slacks_limits(
    title: str, sections: list[tuple[str, str]], label: str, value: str
) -> None:
    card = Card(kind="escalation", title=title, sections=tuple(sections), footer="f")
    blocks = card_blocks(card, (Action("approve", label, value),))
    assert len(blocks) <= 50
    assert len(blocks[0]["text"]["text"]) <= HEADER_LIMIT
    for block in blocks:
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= SECTION_LIMIT
        if block["type"] == "actions":
            for button in block["elements"]:
                assert len(button["text"]["text"]) <= 75 and len(button["value"]) <= 2000
    assert blocks[-2]["type"] == "actions"  # the buttons are never the part that is cut


def test_a_debate_escalation_card_says_every_answer_closes_it() -> None:
    """The footer is the protocol's words (rooms.core.escalations.wording): no owner in a debate."""
    task = Task(
        id=3,
        room=ROOM.key,
        group="g",
        text="t",
        status="waiting_human",
        version=1,
        created_at=0.0,
        updated_at=0.0,
        protocol="debate",
    )
    out = ask(
        task,
        ROOM,
        GroupPolicy(name="g"),
        table=DEBATE.table,
        kind="debate",
        question="Which side?",
        reason="irreconcilable",
    ).post(3)
    assert out.card is not None
    context_text = card_blocks(out.card, BUTTONS)[-3]["elements"][0]["text"]
    assert context_text.startswith("Approve accepts the outcome as it stands and closes the task")
    assert "Nothing more runs in this debate." in context_text and "owner" not in context_text
