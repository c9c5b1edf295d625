"""Starting and restarting: a refused token or a refused intent is a clear settings error
(`tribunal serve` exits 78 with the line), and a post handed again after a crash (the outbox had
not marked it sent) is not posted twice: the bot's posts carry a nonce Discord enforces."""

from __future__ import annotations

import asyncio
import io
import time
from contextlib import redirect_stderr

import pytest

from bot.app import open_app
from bot.cli import EXIT_CONFIG, main
from bot.discord.factory import make_adapter
from bot.settings import Settings
from bot.settings_sections import SettingsError
from rooms.base.model import Outbound, RoomRef
from tests.bot.discord.kit import served, text_of
from tests.fakes.discord import ALICE, APP_ID, CHANNEL_ID, FakeDiscord
from tests.fakes.runner import ScriptedRunner


async def test_a_refused_token_is_a_settings_error(settings: Settings, fake: FakeDiscord) -> None:
    fake.token = "the-real-one"  # the bot has another
    adapter = make_adapter(settings)
    assert adapter is not None
    with pytest.raises(SettingsError) as caught:
        async with open_app(settings, adapter, runner=ScriptedRunner()):
            pass
    assert "Discord refused DISCORD_BOT_TOKEN" in caught.value.lines[0]
    assert fake.token not in str(caught.value) and adapter.token not in str(caught.value)


async def test_a_refused_message_content_intent_is_a_settings_error(
    settings: Settings, fake: FakeDiscord
) -> None:
    fake.app_flags = 0  # Message Content Intent off in the portal: Discord closes with 4014
    adapter = make_adapter(settings)
    assert adapter is not None
    with pytest.raises(SettingsError) as caught:
        async with open_app(settings, adapter, runner=ScriptedRunner()):
            pass
    assert "turn on Message Content Intent" in caught.value.lines[0]


async def test_tribunal_serve_says_so_and_exits_78(settings: Settings, fake: FakeDiscord) -> None:
    fake.token = "the-real-one"
    err = io.StringIO()

    def serve() -> int:
        with redirect_stderr(err):
            return main(["serve"])

    assert await asyncio.to_thread(serve) == EXIT_CONFIG
    assert "tribunal: settings: discord: Discord refused DISCORD_BOT_TOKEN" in err.getvalue()
    assert "Traceback" not in err.getvalue()


async def test_a_post_handed_again_after_a_crash_is_not_posted_twice(
    settings: Settings, fake: FakeDiscord
) -> None:
    async with served(settings, fake, ScriptedRunner()) as s:
        mention = await fake.say(ALICE, "help", mention=True)
        await s.settle()
        room = RoomRef("discord", str(CHANNEL_ID), str(mention["id"]))
        first = await s.adapter.deliver(Outbound(room, "📣 posted once", outbox_id=4242))
    # The process died before the outbox marked row 4242 sent: the next one hands it again.
    async with served(settings, fake, ScriptedRunner()) as s:
        again = await s.adapter.deliver(Outbound(room, "📣 posted once", outbox_id=4242))
    assert again == first
    assert [text_of(m) for m in fake.in_channel(room.thread)].count("📣 posted once") == 1


async def test_a_long_429_on_the_webhook_is_left_to_the_outbox(
    settings: Settings, fake: FakeDiscord
) -> None:
    def webhook_post(method: str, path: str) -> bool:
        return method == "POST" and "/webhooks/" in path and f"/webhooks/{APP_ID}/" not in path

    fake.rate_limit(webhook_post, retry_after=600.0)  # discord.py would sleep all of it
    runner = ScriptedRunner(
        {"owner": ["DONE\nadded it", "DONE\nwrapped up"], "reviewer": ["APPROVED\nfine"]}
    )
    async with served(settings, fake, runner) as s:
        s.adapter.poster.webhook_wait_s = 0.5
        started = time.monotonic()
        mention = await fake.say(ALICE, "add a flag", mention=True)
        await s.until(lambda: s.app.store.task(1))
        await s.settle()
        assert (await s.task()).status == "closed"
        assert time.monotonic() - started < 15
        owner = [
            m
            for m in fake.in_channel(str(mention["id"]))
            if m["author"]["username"] == "Tribunal · owner"
        ]
        assert [m["content"] for m in owner] == ["DONE\nadded it", "DONE\nwrapped up"]
        retried = [r for r in await s.app.store.outbox() if r.text == "DONE\nadded it"]
        assert retried[0].attempts == 2


async def test_serve_ends_with_a_settings_error_when_discord_revokes_the_token(
    settings: Settings, fake: FakeDiscord
) -> None:
    """discord.py reconnects and resumes by itself (test_resilience); a close it cannot recover
    from ends `serve` with the reason, instead of leaving a bot that hears nothing."""
    from bot.serve import serve

    adapter = make_adapter(settings)
    assert adapter is not None
    running = asyncio.create_task(serve(settings, [adapter], runner=ScriptedRunner()))
    await fake.wait_until(lambda: fake.identified)
    await asyncio.sleep(0.3)  # ready
    await fake.drop_gateway(code=4004)  # Authentication failed
    with pytest.raises(SettingsError) as caught:
        async with asyncio.timeout(10):
            await running
    assert "Discord refused DISCORD_BOT_TOKEN" in caught.value.lines[0]
