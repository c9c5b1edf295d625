"""One Slack task with the real Claude Code binary: the real settings → open_app → Slack adapter
(HTTP mode, signed requests) → engine → LocalBackend → `python -m runners claude` against the
scripted fake Messages API, all on 127.0.0.1. Owner → reviewer → wrap-up, in the thread, under
the personas; the model key reaches Claude Code, the Slack token does not."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from bot.app import open_app
from bot.settings import load_settings
from bot.slack.factory import make_adapter
from rooms.base.model import RoomRef
from tests.bot.slack.test_processes import free_port, mention, write_config
from tests.fakes.messages_api import FakeMessagesAPI, system_contains, text
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, fake_slack
from tests.fakes.turn_objects import owner_says, reviewer_says


@pytest.mark.claude
async def test_a_slack_task_through_claude_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = write_config(tmp_path)
    config.write_text(config.read_text() + f'workspace = "{workspace}"\n')
    port, ts = free_port(), "1690000700.000100"
    with FakeMessagesAPI(default=text("DONE\nnothing left to do")) as model:
        model.script(system_contains("You are the owner"), [owner_says("DONE\nadded the README")])
        model.script(
            system_contains("You are the reviewer"), [reviewer_says("APPROVED\nreads well")]
        )
        async with fake_slack() as slack:
            slack.roots.add(ts)
            for name, value in {
                "ANTHROPIC_BASE_URL": model.url,
                "ANTHROPIC_API_KEY": "sk-ant-slack-test",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                "SLACK_API_URL": slack.api_url,
                "TRIBUNAL_HTTP_PORT": str(port),
            }.items():
                monkeypatch.setenv(name, value)
            monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
            settings = load_settings(config, env_file=None)
            adapter = make_adapter(settings)
            assert adapter is not None and adapter.mode == "http"
            started = time.monotonic()
            async with open_app(settings, adapter) as app:
                await mention(port, "add a README", ts)
                room = RoomRef("slack", "C1", ts)
                async with asyncio.timeout(240):
                    while (task := await app.engine.latest_task_in(room)) is None or (
                        task.status != "closed"
                    ):
                        await asyncio.sleep(0.2)
                    await app.engine.idle()
            elapsed = time.monotonic() - started
        posts = slack.thread("C1", ts)
        said = [(m.username, m.text) for m in posts]
        assert ("Tribunal · owner", "DONE\nadded the README") in said, said
        assert ("Tribunal · reviewer", "APPROVED\nreads well") in said, said
        assert any("done and closed" in t for _, t in said), said
        calls = model.calls
        assert calls and {c.headers.get("x-api-key") for c in calls} == {"sk-ant-slack-test"}
        assert all(BOT_TOKEN not in str(c.body) for c in calls)
        print(f"three Claude Code turns through Slack: {elapsed:.1f} s")
