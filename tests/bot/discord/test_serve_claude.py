"""`tribunal serve` as a user runs it, with Discord: the real CLI in its own process, its
discord.py client connected through `start()` to the fake Discord on loopback (REST and, from
`GET /gateway/bot`, the Gateway), the real Claude Code binary on the local backend against the
fake Messages API. A mention opens a thread, the owner and the reviewer answer under their
personas, the task closes; SIGTERM stops the bot cleanly. Kept short: three model turns."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.bot.discord.kit import text_of
from tests.bot.test_chat_cli import TRIBUNAL, _env
from tests.fakes.discord import ALICE, CHANNEL_ID, FakeDiscord
from tests.fakes.messages_api import FakeMessagesAPI, prompt_contains, system_contains, text
from tests.fakes.turn_objects import owner_says, reviewer_says

OWNER = system_contains("You are the owner")
REVIEWER = system_contains("You are the reviewer")


@pytest.mark.claude
async def test_serve_with_discord_and_the_real_claude_code(
    tmp_path: Path, fake: FakeDiscord
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "tribunal.toml").write_text(
        f'[groups.team]\nplatform = "discord"\nchannel = "{CHANNEL_ID}"\n'
        f'approvers = ["{ALICE}"]\nworkspace = "{workspace}"\n'
    )
    with FakeMessagesAPI(default=text("DONE\nnothing to add")) as model:
        model.script(
            OWNER & prompt_contains("Your turn: wrap up"), [owner_says("DONE\nWrapped up.")]
        )
        model.script(OWNER, [owner_says("DONE\nREADME-WRITTEN: explained the flags")])
        model.script(REVIEWER, [reviewer_says("APPROVED\nclear enough")])
        env = _env(
            tmp_path,
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="sk-ant-e2e",
            DISCORD_BOT_TOKEN=fake.token,
            DISCORD_API_URL=fake.api_url,
        )
        log = (tmp_path / "serve.log").open("wb")
        bot = await asyncio.create_subprocess_exec(
            str(TRIBUNAL), "serve", cwd=tmp_path, env=env, stdout=log, stderr=log
        )
        try:
            async with asyncio.timeout(60):
                while not fake.identified:
                    await asyncio.sleep(0.05)
                await asyncio.sleep(2.5)  # discord.py is ready 2 s after the last GUILD_CREATE
            mention = await fake.say(ALICE, "document the CLI flags in the README", mention=True)
            thread = str(mention["id"])

            def closed() -> bool:
                return any("is done and closed" in text_of(m) for m in fake.in_channel(thread))

            await fake.wait_until(closed, timeout=240)
        finally:
            if bot.returncode is None:
                os.kill(bot.pid, signal.SIGTERM)
                async with asyncio.timeout(30):
                    await bot.wait()
            log.close()
    output = (tmp_path / "serve.log").read_text()
    assert bot.returncode == 0, output
    assert "Traceback" not in output, output
    posts = fake.in_channel(thread)
    by = {m["author"]["username"] for m in posts if m.get("webhook_id")}
    assert {"Tribunal · owner", "Tribunal · reviewer"} <= by
    assert any("README-WRITTEN" in text_of(m) for m in posts)
    db = sqlite3.connect(tmp_path / "data" / "tribunal.db")
    assert db.execute("SELECT status FROM tasks").fetchall() == [("closed",)]
    roles = [r for (r,) in db.execute("SELECT role FROM turns ORDER BY seq")]
    assert roles == ["owner", "reviewer", "owner"]
    assert any(op == "identify" for op, _ in fake.gateway_ops)
    assert any(c.path.endswith("/gateway/bot") for c in fake.calls), "the Gateway from REST"
