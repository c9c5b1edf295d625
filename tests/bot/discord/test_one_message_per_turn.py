"""One message per turn on Discord too (issue 27, item 15): a role's progress message (a
webhook's) is deleted once its turn's output is posted."""

from __future__ import annotations

from bot.settings import Settings
from tests.bot.discord.kit import served, text_of
from tests.fakes.discord import ALICE, FakeDiscord
from tests.fakes.runner import Reply, ScriptedRunner


async def test_each_turn_is_one_post_in_the_thread(settings: Settings, fake: FakeDiscord) -> None:
    runner = ScriptedRunner(
        {
            "owner": [
                Reply(text="DONE\nadded it", progress=("reading", "editing")),
                Reply(text="DONE\nwrapped up", progress=("committing",)),
            ],
            "reviewer": [Reply(text="APPROVED\nfine", progress=("running the tests",))],
        }
    )
    async with served(settings, fake, runner) as s:
        mention = await fake.say(ALICE, "add a flag", mention=True)
        await s.until(lambda: s.app.store.task(1))
        await s.settle()
        assert (await s.task()).status == "closed"
        await s.settle()
    thread = str(mention["id"])
    roles = [text_of(m) for m in fake.in_channel(thread) if m.get("webhook_id")]
    assert roles == ["DONE\nadded it", "APPROVED\nfine", "DONE\nwrapped up"], roles
    gone = [m for m in fake.deleted if m.get("webhook_id")]
    assert len(gone) == 3 and all(text_of(m).startswith("⏳") for m in gone)
