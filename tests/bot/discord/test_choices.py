"""A person's choice is a choice (issue 26 #3), in Discord: discord.py fed real interaction
payloads by the fake Discord on loopback, the persistent `DynamicItem` buttons, the real engine
and store, a scripted runner.

The question offers two options: one button per option plus Reject; each option's button sends
that option's stored text to the owner. A non-approver, a click on the answered question and a
number the question does not offer are each refused privately and change nothing."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from bot.discord.buttons import TEMPLATE, UNKNOWN
from bot.settings import Settings
from tests.bot.discord.kit import (
    assert_one_decision_card,
    ephemeral_followups,
    open_escalation,
    served,
)
from tests.bot.discord.test_flow import pair_with_escalation
from tests.fakes.discord import ALICE, BOB, FakeDiscord

OPTIONS = ("yes, the test one", "no, stop")  # tests/bot/discord/kit.py ESCALATE


def _resumed_prompt(runner: Any) -> str:
    [call] = [c for c in runner.calls[2:3]]
    assert call.role == "owner"
    prompt: str = call.prompt
    return prompt.split("## Messages from people")[1].split("\n## ")[0]


@pytest.mark.parametrize("option", [1, 2])
async def test_each_options_button_sends_that_options_text_to_the_owner(
    settings: Settings, fake: FakeDiscord, option: int
) -> None:
    runner = pair_with_escalation()
    async with served(settings, fake, runner) as s:
        thread, card = await open_escalation(s)
        [row] = fake.messages[card]["components"]
        labels = [b["label"] for b in row["components"]]
        assert labels == [f"1. {OPTIONS[0]}", f"2. {OPTIONS[1]}", "Reject"]
        await fake.click(card, f"tribunal:choose:1.{option}", ALICE)
        await s.until(lambda: runner.calls[2:3])
        await s.settle()
        said = _resumed_prompt(runner)
        assert f"chose option {option} of" in said and OPTIONS[option - 1] in said
        assert OPTIONS[2 - option] not in said
        [escalation] = await s.app.store.escalations(1)
        assert escalation.answered_by == str(ALICE)
        assert escalation.answer == f"option {option}: {OPTIONS[option - 1]}"
        assert_one_decision_card(fake, thread, card, f"Chosen by <@{ALICE}>")


async def test_a_non_approvers_choice_is_refused(settings: Settings, fake: FakeDiscord) -> None:
    async with served(settings, fake, pair_with_escalation()) as s:
        _, card = await open_escalation(s)
        version = (await s.task()).version
        await fake.click(card, "tribunal:choose:1.2", BOB)
        await s.until(lambda: ephemeral_followups(fake))
        await s.settle()
        (refusal,) = ephemeral_followups(fake)
        assert "only approvers can answer" in refusal
        task = await s.task()
        assert task.status == "waiting_human" and task.version == version
        assert fake.messages[card]["components"], "the card keeps its buttons"


async def test_a_choice_on_the_answered_question_is_stale(
    settings: Settings, fake: FakeDiscord
) -> None:
    async with served(settings, fake, pair_with_escalation()) as s:
        _, card = await open_escalation(s)
        shown = copy.deepcopy(fake.messages[card])
        await fake.click(card, "tribunal:choose:1.1", ALICE)
        await s.until(lambda: s.app.store.task(1))
        await s.settle()
        await fake.click(card, "tribunal:choose:1.2", ALICE, seen=shown)
        await s.until(lambda: ephemeral_followups(fake))
        await s.settle()
        (stale,) = ephemeral_followups(fake)
        assert "is stale" in stale and "Nothing was changed" in stale
        [escalation] = await s.app.store.escalations(1)
        assert escalation.answer == f"option 1: {OPTIONS[0]}"


async def test_an_option_the_question_does_not_offer_is_refused(
    settings: Settings, fake: FakeDiscord
) -> None:
    async with served(settings, fake, pair_with_escalation()) as s:
        _, card = await open_escalation(s)
        forged = copy.deepcopy(fake.messages[card])
        forged["components"][0]["components"][0]["custom_id"] = "tribunal:choose:1.7"
        await fake.click(card, "tribunal:choose:1.7", ALICE, seen=forged)
        await s.until(lambda: ephemeral_followups(fake))
        await s.settle()
        (refusal,) = ephemeral_followups(fake)
        assert "has no option 7 (it offers 1 to 2)" in refusal and "Nothing" in refusal
        assert (await s.task()).status == "waiting_human"
        [escalation] = await s.app.store.escalations(1)
        assert escalation.status == "open"


@pytest.mark.parametrize(
    ("custom_id", "ours", "unknown"),
    [
        ("tribunal:choose:42.2", True, False),
        ("tribunal:approve:42", True, False),
        ("tribunal:reject:42", True, False),
        ("tribunal:choose:42", False, True),  # a choice names its option
        ("tribunal:approve:42.1", False, True),  # Approve names none
        ("tribunal:choose:42.2.1", False, True),
        ("tribunal:choose:x.1", False, True),
    ],
)
def test_the_button_templates_split_our_ids(custom_id: str, ours: bool, unknown: bool) -> None:
    assert bool(TEMPLATE.fullmatch(custom_id)) is ours
    assert bool(UNKNOWN.fullmatch(custom_id)) is unknown
