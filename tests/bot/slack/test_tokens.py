"""Tokens Slack refuses (issue 27, items 7 and 8): `serve` ends with one `tribunal:` line and
exit 78, never running deaf, never printing a token; the work is kept and goes on, posted once,
after the token is restored.

- A bad SLACK_APP_TOKEN (Socket Mode) is refused at start, as a bad bot token is: the real
  AsyncSocketModeHandler would retry it every 10 s for ever.
- A bot token revoked mid-run (`token_revoked`, `invalid_auth`, `account_inactive`) stops
  `serve` at the first refused call: the owner's turn is kept, its post stays in the outbox, and
  the restarted bot posts it once and goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from bot.cli import EXIT_CONFIG, main
from bot.serve import configured_adapters, serve
from bot.settings import Settings, load_settings
from bot.slack.refusals import TokenRefused
from rooms.base.model import RoomRef
from rooms.store import Store
from tests.bot.slack.test_processes import free_port, mention, until_closed, until_delivered
from tests.fakes.runner import Reply, ScriptedRunner, hang
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, FakeSlack, fake_slack

CHANNEL = "C1"
BAD_APP_TOKEN = "xapp-1-a-token-slack-does-not-know"


def slack_settings(
    workdir: Path, fake: FakeSlack, monkeypatch: pytest.MonkeyPatch, *, socket: bool
) -> Settings:
    (workdir / "tribunal.toml").write_text(
        'backend = "local"\n\n'
        f'[groups.team]\nplatform = "slack"\nchannel = "{CHANNEL}"\napprovers = ["U0BOSS"]\n'
    )
    monkeypatch.setenv("TRIBUNAL_DATA", str(workdir / "data"))
    monkeypatch.setenv("TRIBUNAL_DB", str(workdir / "tribunal.db"))
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_API_URL", fake.api_url)
    if socket:
        monkeypatch.setenv("SLACK_APP_TOKEN", BAD_APP_TOKEN)
    else:
        monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
        monkeypatch.setenv("TRIBUNAL_HTTP_PORT", str(free_port()))
    return load_settings(env_file=None)


async def test_a_bad_app_token_ends_serve_at_start(
    clean_settings_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with fake_slack() as fake:
        settings = slack_settings(clean_settings_env, fake, monkeypatch, socket=True)
        with pytest.raises(TokenRefused) as caught:
            async with asyncio.timeout(20):  # before: connect_async retried for ever
                await serve(settings, configured_adapters(settings), runner=ScriptedRunner())
    [line] = caught.value.lines
    assert line.startswith("settings: slack: Slack refused SLACK_APP_TOKEN (invalid_auth)"), line
    assert BAD_APP_TOKEN not in line and BOT_TOKEN not in line
    assert fake.called("auth.test") and len(fake.called("apps.connections.open")) == 1


async def test_tribunal_serve_says_so_in_one_line_and_exits_78(
    clean_settings_env: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with fake_slack() as fake:
        slack_settings(clean_settings_env, fake, monkeypatch, socket=True)
        err = io.StringIO()

        def run() -> int:
            with redirect_stderr(err):
                return main(["serve"])

        assert await asyncio.to_thread(run) == EXIT_CONFIG
    printed = err.getvalue()
    lines = [line for line in printed.splitlines() if "Slack refused" in line]
    assert len(lines) == 1 and lines[0].startswith("tribunal: settings: slack: Slack refused"), (
        printed
    )
    assert "Traceback" not in printed
    logged = printed + caplog.text
    assert BAD_APP_TOKEN not in logged and BOT_TOKEN not in logged


@pytest.mark.parametrize("code", ["token_revoked", "invalid_auth", "account_inactive"])
async def test_a_bot_token_revoked_mid_run_stops_serve_and_the_work_goes_on_once(
    clean_settings_env: Path, monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    ts = "1690000700.000100"
    room = RoomRef("slack", CHANNEL, ts)
    db = clean_settings_env / "tribunal.db"
    owner_said = "DONE\nbuilt it just before the token was revoked"
    async with fake_slack() as fake:
        fake.roots.add(ts)
        settings = slack_settings(clean_settings_env, fake, monkeypatch, socket=False)
        port = settings.http_port
        assert port is not None
        gate = asyncio.Event()
        first = ScriptedRunner({"owner": [Reply(text=owner_said, gate=gate)], "reviewer": [hang()]})
        serving = asyncio.create_task(serve(settings, configured_adapters(settings), runner=first))
        await mention(port, "build it", ts)
        await first.wait_calls(1)
        fake.revoke(code)  # revoked in the app's settings while the owner works
        gate.set()
        with pytest.raises(TokenRefused) as caught:
            async with asyncio.timeout(30):  # before: serve went on, deaf and mute, for ever
                await serving
        [line] = caught.value.lines
        assert f"Slack refused SLACK_BOT_TOKEN ({code}" in line and BOT_TOKEN not in line
        assert [c.role for c in first.calls if not c.cancelled][:1] == ["owner"]

        store = await Store.open(str(db))
        try:
            task = await store.latest_task_in(room)
            assert task is not None and task.status != "closed"  # kept, resumable
            turns = await store.turns(task.id)
            assert turns[0].role == "owner" and turns[0].status == "done"
            # The review that began meanwhile was cut short (marked interrupted, or left
            # "running" for the restarted engine to recover): it runs again, below.
            assert all(t.status in ("interrupted", "running") for t in turns[1:])
            [row] = [r for r in await store.outbox() if r.text == owner_said]
            assert row.status == "pending"  # the post waits for the token
        finally:
            await store.close()
        assert not [m for m in fake.messages.values() if m.text == owner_said]

        fake.restore()  # a valid token again; the operator restarts the bot
        second = ScriptedRunner({"reviewer": ["APPROVED"], "owner": ["DONE\nwrapped up"]})
        serving = asyncio.create_task(serve(settings, configured_adapters(settings), runner=second))
        try:
            await until_closed(db, room)
            await until_delivered(db, "slack")
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving
        texts = [m.text for m in fake.thread(CHANNEL, ts)]
        assert texts.count(owner_said) == 1, texts
        assert len(texts) == len(set(texts)), texts  # nothing at all was posted twice
        assert any("wrapped up" in t for t in texts)
