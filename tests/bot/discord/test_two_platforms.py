"""Slack and Discord in one process, on one engine and store: each platform's rooms reach only
their own API. Both are the real adapters, built from the settings by their factories: Discord
against the fake Discord (REST + Gateway), Slack in Socket Mode against the fake Slack."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

import bot.slack.factory
from bot.app import open_app
from bot.discord.factory import make_adapter as make_discord
from rooms.base.model import RoomRef
from tests.bot.discord.kit import text_of, write_settings
from tests.fakes.discord import ALICE, FakeDiscord
from tests.fakes.runner import ScriptedRunner
from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, BOT_USER, event_body, fake_slack

SLACK_CHANNEL, SLACK_TS = "C1", "1700000000.000100"


async def test_each_platforms_rooms_reach_only_its_own_api(
    clean_settings_env: Path, tmp_path: Path, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with fake_slack() as slack_api:
        monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
        monkeypatch.setenv("SLACK_APP_TOKEN", APP_TOKEN)
        monkeypatch.setenv("SLACK_API_URL", slack_api.api_url)
        settings = write_settings(
            clean_settings_env,
            tmp_path / "data",
            fake,
            monkeypatch,
            extra=f'\n[groups.slackers]\nplatform = "slack"\nchannel = "{SLACK_CHANNEL}"\n'
            'approvers = ["U1"]\n',
        )
        runner = ScriptedRunner(default={"owner": "DONE\nok", "reviewer": "APPROVED\nfine"})
        discord = make_discord(settings)
        slack = bot.slack.factory.make_adapter(settings)
        assert discord is not None and slack is not None
        async with open_app(settings, discord, slack, runner=runner) as app:
            app.engine.outbox.first_backoff_s = 0.01
            mention = await fake.say(ALICE, "a discord task", mention=True)
            slack_api.roots.add(SLACK_TS)
            event = {
                "type": "app_mention",
                "user": "U1",
                "text": f"<@{BOT_USER}> a slack task",
                "ts": SLACK_TS,
                "channel": SLACK_CHANNEL,
            }
            await slack_api.push(event_body(event, event_id="EvTwo1"))
            slack_room = RoomRef("slack", SLACK_CHANNEL, SLACK_TS)
            discord_room = RoomRef("discord", str(mention["channel_id"]), str(mention["id"]))

            async def closed(room: RoomRef) -> bool:
                task = await app.store.latest_task_in(room)
                return task is not None and task.status == "closed"

            async def both_done() -> bool:
                await discord.drain()
                await app.engine.idle()
                return await closed(slack_room) and await closed(discord_room)

            await _until(both_done)
            discord_task = await app.store.latest_task_in(discord_room)
            slack_task = await app.store.latest_task_in(slack_room)
            assert discord_task is not None and slack_task is not None
            await slack_api.wait_for(
                lambda: any(
                    f"Task #{slack_task.id} is done" in m.text
                    for m in slack_api.thread(SLACK_CHANNEL, SLACK_TS)
                )
            )
        slack_posts = [c for c in slack_api.calls if c.method == "chat.postMessage"]
        assert slack_posts and all(c.params.get("channel") == SLACK_CHANNEL for c in slack_posts)
        assert not any(f"Task #{discord_task.id}" in m.text for m in slack_api.messages.values())
        assert not any("/C1/" in c.path or "1700000000" in c.path for c in fake.calls)
        thread = str(mention["id"])
        done = [
            m for m in fake.in_channel(thread) if f"Task #{discord_task.id} is done" in text_of(m)
        ]
        assert len(done) == 1
        assert not any(f"Task #{slack_task.id}" in text_of(m) for m in fake.messages.values())


async def _until(check: Callable[[], Awaitable[bool]], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.02)
