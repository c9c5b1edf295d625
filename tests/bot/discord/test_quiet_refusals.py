"""Quiet refusals get a short private answer (issue 27, item 16), through real discord.py:

- a mention in a channel that is no group's was ignored without a word; now the person gets a
  direct message (Discord has no ephemeral reply to a message) naming the channel and what an
  operator adds to tribunal.toml, and nothing is posted in the channel;
- a click on one of our buttons that this version does not know (an older card's, a forged
  one) was dropped by discord.py, and the clicker saw only "This interaction failed"; now they
  alone read that nothing changed and how to answer instead.
"""

from __future__ import annotations

import copy

from bot.settings import Settings
from tests.bot.discord.kit import open_escalation, served
from tests.bot.discord.test_flow import pair_with_escalation
from tests.fakes.discord import ALICE, BOT_ID, OTHER_CHANNEL_ID, FakeDiscord
from tests.fakes.runner import ScriptedRunner


async def test_a_mention_in_a_channel_that_is_no_groups_is_answered_in_private(
    settings: Settings, fake: FakeDiscord
) -> None:
    async with served(settings, fake, ScriptedRunner()) as s:
        await fake.say(ALICE, "fix the build", channel=OTHER_CHANNEL_ID, mention=True)
        await fake.say(ALICE, "lunch?", channel=OTHER_CHANNEL_ID)  # chatter: not for us
        await s.until(lambda: fake.in_dm(ALICE))
        await s.settle()
        [told] = fake.in_dm(ALICE)
        assert told["content"].startswith("Tribunal is not set up in #random"), told["content"]
        assert f'channel = "{OTHER_CHANNEL_ID}"' in told["content"]
        mine = [
            m for m in fake.in_channel(str(OTHER_CHANNEL_ID)) if m["author"]["id"] == str(BOT_ID)
        ]
        assert mine == []
        assert await s.app.store.task(1) is None and s.runner.calls == []


async def test_a_click_on_a_button_this_version_does_not_know_is_answered_privately(
    settings: Settings, fake: FakeDiscord
) -> None:
    async with served(settings, fake, pair_with_escalation()) as s:
        _, card = await open_escalation(s)
        shown = copy.deepcopy(fake.messages[card])
        shown["components"][0]["components"][0]["custom_id"] = "tribunal:frobnicate:1"
        click = await fake.click(card, "tribunal:frobnicate:1", ALICE, seen=shown)
        answer = await fake.wait_for(
            lambda c: c.query.get("interaction_id") == click and "callback" in c.path
        )
        await s.settle()
        data = (answer.body or {}).get("data") or {}
        assert data.get("flags", 0) & 64, "ephemeral: the clicker alone sees it"
        assert str(data.get("content")).startswith("That button (“frobnicate”) is not one I know")
        assert (await s.task()).status == "waiting_human"
