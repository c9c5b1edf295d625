"""A person's choice is a choice (issue 26 #3), over Slack's HTTP mode: signed requests to the
real bolt app, the real Engine behind it, slack_sdk posting to the fake Slack on loopback.

An escalation that offers options shows one button per option plus Reject, no Approve; the
button's value binds the option's number to the escalation, and the owner's next prompt carries
that option's stored text. Refused privately, changing nothing: a non-approver's click, a click
on an answered escalation (stale), a number the question does not offer, another escalation's
id."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bot.slack.kit import SlackKit, slack_kit
from tests.fakes.rulings import ruling_reply as ruling
from tests.fakes.runner import Script
from tests.fakes.slack_api import Message

OPTIONS = ["use the production key read-only", "no, use a mock of the API"]


def choosing() -> Script:
    return {
        "owner": [
            "BLOCKED: I need the staging API key to run the integration tests.",
            "DONE\nwent with the choice",
            "DONE\nwrapped up",
        ],
        "arbiter": [ruling("ESCALATE", question="Which key may the owner use?", options=OPTIONS)],
        "reviewer": ["APPROVED"],
    }


async def _card(kit: SlackKit) -> tuple[str, Message]:
    thread = await kit.mention("add integration tests")
    await kit.settle()
    [card] = [m for m in kit.thread(thread) if m.buttons()]
    return thread, card


@pytest.mark.parametrize("option", [1, 2])
async def test_each_options_button_sends_that_options_text_to_the_owner(
    tmp_path: Path, option: int
) -> None:
    async with slack_kit(tmp_path, choosing()) as kit:
        thread, card = await _card(kit)
        buttons = card.buttons()
        # One button per option, then Reject; no Approve (the question is not a yes/no one).
        assert [b["action_id"] for b in buttons] == [
            "tribunal_choose",
            "tribunal_choose.2",
            "tribunal_reject",
        ]
        assert [b["text"]["text"] for b in buttons] == [
            f"1. {OPTIONS[0]}",
            f"2. {OPTIONS[1]}",
            "Reject",
        ]
        assert "or reply in this thread" in card.shown()
        action_id = buttons[option - 1]["action_id"]
        assert await kit.click(card, action_id, user="boss") == 200
        await kit.settle()
        prompt = kit.runner.calls[2].prompt
        assert kit.runner.calls[2].role == "owner"
        # The people's messages of the prompt carry the chosen option's text, not the other's.
        said = prompt.split("## Messages from people")[1].split("\n## ")[0]
        assert f"chose option {option} of" in said and OPTIONS[option - 1] in said
        assert OPTIONS[2 - option] not in said
        # The decision: which option, by whom, on the escalation and in the decision record.
        [escalation] = await kit.store.escalations(1)
        assert escalation.answered_by == "boss"
        assert escalation.answer == f"option {option}: {OPTIONS[option - 1]}"
        records = "\n".join(p.read_text() for p in (tmp_path / "data").rglob("task-1-*.md"))
        assert f"option {option}: {OPTIONS[option - 1]}" in records
        assert "Answered by **boss**" in records
        # The card says who chose what; its buttons are gone.
        assert card.buttons() == []
        assert "Chosen by boss" in card.shown()
        assert any("boss chose an option" in m.text for m in kit.thread(thread))
        closed = await kit.store.latest_task_in(kit.room(thread))
        assert closed is not None and closed.status == "closed"


async def test_a_non_approvers_choice_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async with slack_kit(tmp_path, choosing()) as kit:
        thread, card = await _card(kit)
        task = await kit.store.open_task_in(kit.room(thread))
        assert await kit.click(card, "tribunal_choose.2", user="mallory") == 200
        await kit.settle()
        [refusal] = kit.fake.ephemerals
        assert refusal["user"] == "mallory" and "only approvers" in refusal["text"]
        after = await kit.store.open_task_in(kit.room(thread))
        assert task is not None and after is not None and after.version == task.version
        assert len(kit.runner.calls) == 2 and card.updates == []


async def test_a_choice_on_an_answered_escalation_is_stale(tmp_path: Path) -> None:
    async with slack_kit(tmp_path, choosing()) as kit:
        _, card = await _card(kit)
        value = card.buttons()[0]["value"]
        assert await kit.click(card, "tribunal_choose", user="boss") == 200
        await kit.settle()
        calls = len(kit.runner.calls)
        # A client still showing the buttons: the other option, on the answered question.
        other = value.replace(".1", ".2")
        assert await kit.click(card, "tribunal_choose.2", user="boss", value=other) == 200
        await kit.settle()
        assert "stale" in kit.fake.ephemerals[-1]["text"]
        [escalation] = await kit.store.escalations(1)
        assert escalation.answer == f"option 1: {OPTIONS[0]}"
        assert len(kit.runner.calls) == calls


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("1.3", "has no option 3 (it offers 1 to 2)"),  # out of range
        ("1.0", "has no option 0"),
        ("999.1", "stale"),  # another (no) escalation
        ("1", "stale"),  # not a choice's value
        ("1.1.1", "stale"),
        ("1.1 OR 1=1", "stale"),
    ],
)
async def test_a_forged_choice_is_refused_and_changes_nothing(
    tmp_path: Path, value: str, says: str
) -> None:
    async with slack_kit(tmp_path, choosing()) as kit:
        thread, card = await _card(kit)
        assert await kit.click(card, "tribunal_choose", user="boss", value=value) == 200
        await kit.settle()
        [refusal] = kit.fake.ephemerals
        assert refusal["user"] == "boss" and says in refusal["text"], refusal["text"]
        assert "Nothing" in refusal["text"]
        task = await kit.store.open_task_in(kit.room(thread))
        assert task is not None and task.status == "waiting_human"
        [escalation] = await kit.store.escalations(1)
        assert escalation.status == "open"
        assert len(kit.runner.calls) == 2 and card.updates == []


async def test_choose_by_reply_in_the_thread_picks_the_option(tmp_path: Path) -> None:
    async with slack_kit(tmp_path, choosing()) as kit:
        thread, _ = await _card(kit)
        await kit.mention("choose 2", user="boss", thread_ts=thread)
        await kit.settle()
        assert OPTIONS[1] in kit.runner.calls[2].prompt
        [escalation] = await kit.store.escalations(1)
        assert escalation.answer == f"option 2: {OPTIONS[1]}"
