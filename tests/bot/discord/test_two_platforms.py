"""Discord beside another platform in one process, on one engine and store: each platform's
rooms reach only their own API. Discord is the real adapter against the fake Discord; the other
platform ("slack") is a recording adapter, since the Slack adapter is built elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import open_app
from bot.discord.factory import make_adapter
from rooms.model import Inbound, RoomRef
from tests.bot.discord.kit import text_of, write_settings
from tests.fakes.discord import ALICE, FakeDiscord
from tests.fakes.platform import RecordingAdapter
from tests.fakes.runner import ScriptedRunner

SLACK_ROOM = RoomRef("slack", "C1", "1700000000.000100")


async def test_each_platforms_rooms_reach_only_its_own_api(
    clean_settings_env: Path, tmp_path: Path, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = write_settings(
        clean_settings_env,
        tmp_path / "data",
        fake,
        monkeypatch,
        extra='\n[groups.slackers]\nplatform = "slack"\nchannel = "C1"\napprovers = ["U1"]\n',
    )
    runner = ScriptedRunner(default={"owner": "DONE\nok", "reviewer": "APPROVED\nfine"})
    discord = make_adapter(settings)
    assert discord is not None
    slack = RecordingAdapter("slack")
    async with open_app(settings, discord, slack, runner=runner) as app:
        app.engine.outbox.first_backoff_s = 0.01
        mention = await fake.say(ALICE, "a discord task", mention=True)
        await app.engine.handle(
            Inbound(SLACK_ROOM, "U1", "a slack task", event_id="slack:C1:1", mentions_bot=True)
        )
        for _ in range(3):
            await discord.drain()
            await app.engine.idle()
        discord_room = RoomRef("discord", str(mention["channel_id"]), str(mention["id"]))
        discord_task = await app.store.latest_task_in(discord_room)
        slack_task = await app.store.latest_task_in(SLACK_ROOM)
        assert discord_task is not None and slack_task is not None
        assert {discord_task.status, slack_task.status} == {"closed"}
    thread = str(mention["id"])
    assert {p.message.room.platform for p in slack.posts} == {"slack"}
    assert any(f"Task #{slack_task.id} is done" in p.text for p in slack.posts)
    assert not any("/C1/" in c.path or "1700000000" in c.path for c in fake.calls)
    done = [m for m in fake.in_channel(thread) if f"Task #{discord_task.id} is done" in text_of(m)]
    assert len(done) == 1
    assert not any(f"Task #{slack_task.id}" in text_of(m) for m in fake.messages.values())
    assert not any(f"Task #{discord_task.id}" in p.text for p in slack.posts)
