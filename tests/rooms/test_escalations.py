"""What an escalation tells the room each answer does: read from the protocol's table, so the
pair says the owner continues and arena, debate and resolve (which close on every answer) never
mention an owner."""

from __future__ import annotations

import pytest

from rooms.arena.protocol import ARENA
from rooms.base.machine import StateTable
from rooms.base.model import GroupPolicy, RoomRef, Task
from rooms.base.words import ANSWER, APPROVE, CLOSED, REJECT, STOP, WAITING_HUMAN
from rooms.core.escalations import ask, wording
from rooms.debate.protocol import DEBATE
from rooms.pair.states import TABLE as PAIR_TABLE
from rooms.resolve.protocol import RESOLVE

ROOM = RoomRef("test", "C1", "T1")
POLICY = GroupPolicy(name="g", approvers=frozenset({"boss"}))
PHASED = [ARENA.table, DEBATE.table, RESOLVE.table]


def task(protocol: str) -> Task:
    return Task(
        id=7,
        room=ROOM.key,
        group="g",
        text="t",
        opened_by="alice",
        status=WAITING_HUMAN,
        version=1,
        created_at=0.0,
        updated_at=0.0,
        protocol=protocol,
    )


def test_the_pair_says_the_owner_continues_as_before() -> None:
    w = wording(PAIR_TABLE)
    assert w.instruction == (
        "Approve to let the owner continue, Reject to close the task, or reply here with an answer."
    )
    assert w.footer == "Approve lets the owner continue, Reject closes the task."
    assert w.reply("approve", "boss", 7) == "boss approved; the owner continues with task #7."
    assert w.reply("answer", "boss", 7) == "boss answered; the owner continues with task #7."
    assert w.reply("reject", "boss", 7) == "Task #7 closed: boss rejected the escalation."


@pytest.mark.parametrize("table", PHASED, ids=lambda t: t.protocol)
def test_a_protocol_that_closes_on_every_answer_says_so_and_names_no_owner(
    table: StateTable,
) -> None:
    w = wording(table)
    name = table.protocol
    assert w.instruction == (
        "Approve to accept the outcome as it stands and close the task, Reject to turn it down "
        "and close the task, or reply here with an answer, which is kept on the task and closes "
        f"it too. Nothing more runs in this {name}."
    )
    assert w.footer == (
        "Approve accepts the outcome as it stands and closes the task, Reject turns it down and "
        f"closes it, an answer is kept on the task and closes it too. Nothing more runs in this "
        f"{name}."
    )
    assert w.reply("approve", "boss", 7) == "Task #7 closed: boss approved."
    assert w.reply("reject", "boss", 7) == "Task #7 closed: boss rejected the escalation."
    assert w.reply("answer", "boss", 7) == (
        "Task #7 closed: boss answered (the answer is kept on the task)."
    )
    said = [w.instruction, w.footer, *w.replies.values()]
    assert not any("owner" in s or "continue" in s for s in said)


@pytest.mark.parametrize("table", PHASED, ids=lambda t: t.protocol)
def test_the_escalation_text_and_card_carry_the_protocols_words(table: StateTable) -> None:
    draft = ask(
        task(table.protocol),
        ROOM,
        POLICY,
        table=table,
        kind="ceiling",
        question="Close it?",
        reason="max turns",
    )
    out = draft.post(3)
    assert wording(table).instruction in out.text and "owner" not in out.text
    assert out.card is not None and out.card.footer.startswith(wording(table).footer)
    assert out.card.footer.endswith("Only approvers can answer: boss.")
    assert "owner" not in out.card.footer


def test_the_words_follow_the_table_not_the_protocols_name() -> None:
    """A protocol whose people send the task back to an actor on Approve and Reject says who."""
    left = "left_turn"
    table = StateTable(
        "relay",
        left,
        {
            left: {STOP: CLOSED},
            WAITING_HUMAN: {APPROVE: left, REJECT: left, STOP: CLOSED},  # no written answers
            CLOSED: {},
        },
        {left: "left", WAITING_HUMAN: None, CLOSED: None},
    )
    w = wording(table)
    assert w.instruction == (
        "Approve to let the left continue, or Reject to send the task back to the left."
    )
    assert ANSWER not in w.replies and "reply here" not in w.instruction
    assert w.reply("reject", "boss", 2) == "boss rejected; the left continues with task #2."
    assert "Nothing more runs" not in w.footer
