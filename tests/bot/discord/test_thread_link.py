"""The web address of a room's thread, for the dashboard's links (bot.adapter.ThreadLinks): the
guild of the room's channel and the thread's id."""

from __future__ import annotations

from bot.adapter import ThreadLinks
from bot.settings import Settings
from rooms.base.model import RoomRef
from tests.bot.discord.kit import served
from tests.fakes.discord import ALICE, CHANNEL_ID, FakeDiscord
from tests.fakes.discord.payloads import GUILD_ID
from tests.fakes.runner import ScriptedRunner


async def test_a_threads_link_names_its_guild_and_thread(
    settings: Settings, fake: FakeDiscord
) -> None:
    runner = ScriptedRunner({"owner": ["DONE", "DONE\nwrapped up"], "reviewer": ["APPROVED"]})
    async with served(settings, fake, runner) as s:
        mention = await fake.say(ALICE, "fix the flaky login test", mention=True)
        await s.until(lambda: s.app.store.task(1))
        await s.settle()
        task = await s.task()
        platform, channel, thread = task.room.split(":")
        assert isinstance(s.adapter, ThreadLinks)
        link = s.adapter.thread_link(RoomRef(platform, channel, thread))
        assert link == f"https://discord.com/channels/{GUILD_ID}/{mention['id']}"
        # A channel it does not know, or ids that are not Discord's: no link, not a wrong one.
        assert s.adapter.thread_link(RoomRef("discord", "1", "2")) is None
        assert s.adapter.thread_link(RoomRef("discord", str(CHANNEL_ID), "../x")) is None
