"""The Gateway's hot path (issue 28): discord.py runs the adapter's `on_message` for every
message the bot can see, so it looks the room up once, from the channel and the mentions, and
does nothing else there: a room's message is rendered (its text, its author's roles) and handed
to the engine in a task of its own; a message of no room reaches nothing at all.

discord.py against the fake Discord on loopback, the adapter as `serve` builds it, the real
engine and store."""

from __future__ import annotations

import asyncio
from typing import Any

import discord
import pytest

import bot.discord.inbound
from bot.settings import Settings
from rooms.base.model import Inbound
from tests.bot.discord.kit import Served, served
from tests.fakes.discord import ALICE, BOB, CHANNEL_ID, OTHER_CHANNEL_ID, FakeDiscord
from tests.fakes.runner import Reply, ScriptedRunner


async def open_task(s: Served, runner: ScriptedRunner) -> str:
    mention = await s.fake.say(ALICE, "a task that runs", mention=True)
    await runner.wait_calls(1)
    await s.adapter.drain()
    return str(mention["id"])


def watch_dispatch(s: Served) -> list[bool]:
    """Flags, one per message: whether discord.py's dispatch of it was still running."""
    inside: list[bool] = []
    on_message = s.adapter.client._handle_message

    async def dispatch(message: discord.Message) -> None:
        inside.append(True)
        try:
            await on_message(message)
        finally:
            inside[-1] = False

    s.adapter.client._handle_message = dispatch
    return inside


async def test_a_rooms_message_is_rendered_off_the_gateways_dispatch(
    settings: Settings, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = ScriptedRunner({"owner": [Reply(hang=True)]})
    async with served(settings, fake, runner) as s:
        thread = await open_task(s, runner)
        inside = watch_dispatch(s)
        rendered_inside: list[bool] = []
        real = bot.discord.inbound.plain_text

        def spy(message: discord.Message, bot_id: int | None) -> str:
            rendered_inside.append(inside[-1])
            return real(message, bot_id)

        monkeypatch.setattr(bot.discord.inbound, "plain_text", spy)
        await fake.say(ALICE, f"ask <@{BOB}> about it", channel=thread, mentions=(BOB,))
        await s.until(lambda: s.app.store.messages(1))
        assert rendered_inside == [False], "the text was read inside discord.py's dispatch"
        (stored,) = await s.app.store.messages(1)
        assert stored.text == "ask @bob about it"  # still rendered as a person reads it


async def test_messages_of_no_room_reach_nothing(
    settings: Settings, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = ScriptedRunner({"owner": [Reply(hang=True)]})
    async with served(settings, fake, runner) as s:
        thread = await open_task(s, runner)
        handed: list[Inbound] = []
        real = s.app.engine.handle

        async def spy(inbound: Inbound) -> None:
            handed.append(inbound)
            await real(inbound)

        monkeypatch.setattr(s.app.engine, "handle", spy)
        spawned: list[Any] = []
        spawn = s.adapter._spawn

        def count(work: Any, name: str) -> None:
            spawned.append(name)
            spawn(work, name)

        monkeypatch.setattr(s.adapter, "_spawn", count)
        await fake.say(ALICE, "chatter at the top of the channel", channel=CHANNEL_ID)
        await fake.say(ALICE, "chatter in another channel", channel=OTHER_CHANNEL_ID)
        await fake.say(BOB, "a mention in another channel", channel=OTHER_CHANNEL_ID, mention=True)
        await fake.say(ALICE, "a note in the task's thread", channel=thread)
        await s.until(lambda: len(handed) == 1)
        await asyncio.sleep(0.05)
        await s.adapter.drain()
        assert [i.text for i in handed] == ["a note in the task's thread"]
        # Two pieces of work, not four: the note, and telling Bob this channel is no group's.
        assert len(spawned) == 2, spawned
