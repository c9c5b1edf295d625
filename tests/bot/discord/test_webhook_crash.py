"""A role's post (a webhook's) is posted exactly once across a crash (issue 27, item 9).

`tribunal serve` with Discord runs in a child process (tests/fakes/slack_child.py). The fake
Discord stores the owner's webhook post and, before answering, the parent kills the bot
(SIGKILL): Discord has the message, the outbox row is not marked sent. Bot posts were safe (a
nonce Discord enforces); a webhook takes no nonce, so the restarted bot posted the row again.
Now it reads the thread back first (our webhook's messages after the room's last delivered one)
and only marks the row sent.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from rooms.base.model import Outbound, RoomRef
from rooms.store import Store
from tests.bot.discord.kit import served, text_of
from tests.bot.slack.test_processes import ROOT, until_closed, until_delivered
from tests.fakes.children import stop_child
from tests.fakes.discord import ALICE, APP_ID, CHANNEL_ID, FakeDiscord
from tests.fakes.runner import ScriptedRunner

CUT_OFF = "the owner's post cut off by SIGKILL"


@asynccontextmanager
async def serve_child(
    tmp_path: Path, fake: FakeDiscord, script: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    config = tmp_path / "tribunal.toml"
    config.write_text(
        'backend = "local"\n\n'
        f'[tribunal]\ndb = "{tmp_path / "tribunal.db"}"\ndata = "{tmp_path / "data"}"\n\n'
        f'[groups.team]\nplatform = "discord"\nchannel = "{CHANNEL_ID}"\n'
        f'approvers = ["{ALICE}"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIBUNAL_", "DISCORD_"))}
    env.update(DISCORD_BOT_TOKEN=fake.token, DISCORD_API_URL=fake.api_url, PYTHONPATH=str(ROOT))
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.fakes.slack_child", str(config), script, env=env, cwd=ROOT
    )
    try:
        await fake.wait_until(lambda: fake.identified, timeout=60)
        await asyncio.sleep(1.0)  # the child's client is ready (it waits 0.05 s for guilds)
        yield child
    finally:
        await stop_child(child)


async def test_a_webhook_post_that_reached_discord_before_a_crash_is_not_posted_again(
    tmp_path: Path, fake: FakeDiscord
) -> None:
    db = tmp_path / "tribunal.db"
    async with serve_child(tmp_path, fake, "webhook_first") as first:
        killed: list[dict[str, Any]] = []

        def kill_on_the_owners_post(message: dict[str, Any]) -> None:
            if CUT_OFF in (message.get("content") or "") and not killed:
                killed.append(message)  # Discord has it; the bot never hears back
                os.kill(first.pid, signal.SIGKILL)

        fake.on_webhook_post = kill_on_the_owners_post
        mention = await fake.say(ALICE, "build it", mention=True)
        async with asyncio.timeout(60):
            await first.wait()
        assert first.returncode == -signal.SIGKILL and killed
    fake.on_webhook_post = None
    thread = str(mention["id"])
    room = RoomRef("discord", str(CHANNEL_ID), thread)
    store = await Store.open(str(db))
    try:
        [row] = [r for r in await store.outbox() if CUT_OFF in r.text]
    finally:
        await store.close()
    assert row.status == "pending" and row.message_id is None  # the mark never happened

    async with serve_child(tmp_path, fake, "resume"):
        await until_closed(db, room)
        await until_delivered(db, "discord")
    posts = [m for m in fake.in_channel(thread) if CUT_OFF in text_of(m)]
    assert len(posts) == 1, [text_of(m) for m in fake.in_channel(thread)]
    store = await Store.open(str(db))
    try:
        [row] = [r for r in await store.outbox() if CUT_OFF in r.text]
    finally:
        await store.close()
    assert row.status == "sent" and row.message_id is not None
    assert row.message_id.endswith(f":{posts[0]['id']}")  # the post found, not a new one
    owner = [text_of(m) for m in fake.in_channel(thread) if m.get("webhook_id")]
    assert len(owner) == len(set(owner)), owner  # no role's post twice
    assert any("wrapped up after the restart" in t for t in owner)


def owner_posts(fake: FakeDiscord, thread: str) -> list[str]:
    return [
        m["content"]
        for m in fake.in_channel(thread)
        if m.get("webhook_id") and m["author"]["username"] == "Tribunal · owner"
    ]


async def test_the_read_back_starts_after_the_rooms_last_post_and_finishes_a_partial_one(
    settings: Settings, fake: FakeDiscord
) -> None:
    """Read back in-process, as a restarted bot does (a fresh adapter each time): the same text
    posted by an earlier row is not taken for this row's; the pieces of a long post that got
    through are not posted again, the rest are."""
    async with served(settings, fake, ScriptedRunner()) as s:
        mention = await fake.say(ALICE, "help", mention=True)
        await s.settle()
        thread = str(mention["id"])
        room = RoomRef("discord", str(CHANNEL_ID), thread)
        earlier = await s.adapter.deliver(Outbound(room, "DONE", persona="owner", outbox_id=5001))
    # Row 5002 says the same, and its first attempt never reached Discord.
    async with served(settings, fake, ScriptedRunner()) as s:
        again = Outbound(room, "DONE", persona="owner", outbox_id=5002, attempt=2, after=earlier)
        second = await s.adapter.deliver(again)
        assert second != earlier and s.adapter.poster.lookups == 1
    async with served(settings, fake, ScriptedRunner()) as s:  # and once more: found now
        third = replace(again, attempt=3)
        assert await s.adapter.deliver(third) == second
    assert owner_posts(fake, thread) == ["DONE", "DONE"]

    # A post in three pieces; Discord takes two, the third is cut off (given up on).
    long = "\n".join(f"line {i}: " + "x" * 60 for i in range(80))
    webhook_posts = [0]

    def third_piece(method: str, path: str) -> bool:
        if method == "POST" and "/webhooks/" in path and f"/webhooks/{APP_ID}/" not in path:
            webhook_posts[0] += 1
            return webhook_posts[0] == 3
        return False

    async with served(settings, fake, ScriptedRunner()) as s:
        s.adapter.poster.webhook_wait_s = 0.3
        fake.rate_limit(third_piece, retry_after=600.0)
        message = Outbound(room, long, persona="owner", outbox_id=5003, after=second)
        with pytest.raises(TimeoutError):
            await s.adapter.deliver(message)
    assert len(owner_posts(fake, thread)) == 4  # two DONE, two pieces
    async with served(settings, fake, ScriptedRunner()) as s:
        head = await s.adapter.deliver(replace(message, attempt=2))
    pieces = owner_posts(fake, thread)[2:]
    assert len(pieces) == 3 and head.endswith(f":{fake.in_channel(thread)[-3]['id']}")
    assert "\n".join(pieces).count("line 0:") == 1 and "line 79:" in pieces[-1]
