"""The log of `tribunal serve` (issue 27, item 10): Python's logging set up for our code and the
platform libraries, one format (text or JSON lines), `--log-level` and TRIBUNAL_LOG_LEVEL, no
token in it; and a button whose handling fails is logged with its task and answered to the
person who clicked, on Discord and on Slack. Real discord.py, slack-bolt and the CLI against the
fakes on loopback."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest

from bot.cli import EXIT_CONFIG, main
from bot.settings import Settings
from rooms.base.model import Inbound
from tests.bot.discord.kit import ephemeral_followups, open_escalation, served, write_settings
from tests.bot.discord.test_flow import pair_with_escalation
from tests.bot.slack.kit import slack_kit
from tests.bot.slack.test_http_e2e import ruling
from tests.fakes.discord import ALICE, FakeDiscord
from tests.fakes.runner import Script


@pytest.fixture
async def fake() -> Any:
    server = await FakeDiscord().start()
    try:
        yield server
    finally:
        await server.stop()


async def serve_until_revoked(fake: FakeDiscord, *argv: str) -> str:
    """`tribunal [argv] serve` on Discord, in a thread, until Discord revokes its token (exit
    78); what it wrote on stderr."""
    err = io.StringIO()

    def run() -> int:
        with redirect_stderr(err):
            return main([*argv, "serve"])

    serving = asyncio.create_task(asyncio.to_thread(run))
    await fake.wait_until(lambda: fake.identified)
    await asyncio.sleep(0.3)  # ready: the guild is in, discord.py has said so
    await fake.drop_gateway(code=4004)
    async with asyncio.timeout(30):
        assert await serving == EXIT_CONFIG
    return err.getvalue()


async def test_serve_on_discord_logs_our_lines_and_discord_pys_in_one_format(
    clean_settings_env: Path,
    tmp_path: Path,
    fake: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_settings(clean_settings_env, tmp_path / "data", fake, monkeypatch)
    printed = await serve_until_revoked(fake, "--log-level", "info")
    lines = printed.splitlines()
    ours = [line for line in lines if " INFO bot.discord.adapter: discord: connected as" in line]
    library = [line for line in lines if " INFO discord." in line]
    assert ours and library, printed  # before: not one line
    assert any("tribunal: settings: discord: Discord refused" in line for line in lines)
    assert fake.token not in printed


async def test_json_lines_from_the_environment(
    clean_settings_env: Path,
    tmp_path: Path,
    fake: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_settings(clean_settings_env, tmp_path / "data", fake, monkeypatch)
    monkeypatch.setenv("TRIBUNAL_LOG_FORMAT", "json")
    monkeypatch.setenv("TRIBUNAL_LOG_LEVEL", "debug")
    printed = await serve_until_revoked(fake)
    records = [json.loads(line) for line in printed.splitlines() if line.startswith("{")]
    assert {"time", "level", "logger", "message"} <= set(records[0])
    assert any(r["logger"] == "bot.discord.adapter" for r in records)
    assert any(r["level"] == "DEBUG" and r["logger"].startswith("discord.") for r in records)
    assert fake.token not in printed  # discord.py's debug lines included


async def test_a_bad_log_level_in_the_environment_is_a_settings_error(
    clean_settings_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRIBUNAL_LOG_LEVEL", "loud")
    assert main(["serve"]) == EXIT_CONFIG
    assert "tribunal: settings: TRIBUNAL_LOG_LEVEL: 'LOUD' is not one of" in capsys.readouterr().err


class Broken(RuntimeError):
    pass


async def test_a_discord_click_that_fails_is_logged_with_its_task_and_answered(
    settings: Settings, fake: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    async with served(settings, fake, pair_with_escalation()) as s:
        _, card = await open_escalation(s)
        handle = s.app.engine.handle

        async def failing(inbound: Inbound) -> None:
            if inbound.action is not None:
                raise Broken("the database is locked")  # a fault inside the engine
            await handle(inbound)

        s.app.engine.handle = failing  # type: ignore[method-assign]
        click = await fake.click(card, "tribunal:choose:1.1", ALICE)
        await s.until(lambda: ephemeral_followups(fake))
        await s.settle()
    [answer] = ephemeral_followups(fake)
    assert answer.startswith("Something went wrong while handling your click")
    assert f"discord:interaction:{click}" in answer
    [record] = [r for r in caplog.records if r.name == "bot.discord.adapter" and r.exc_info]
    assert record.levelno == logging.ERROR and "task #1" in record.getMessage()
    assert isinstance(record.exc_info[1], Broken)  # type: ignore[index]


async def test_a_slack_click_that_fails_is_logged_with_its_task_and_answered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    script: Script = {
        "owner": ["BLOCKED: I need the staging key."],
        "arbiter": [ruling("ESCALATE", question="May the owner use it?", options=["yes", "no"])],
    }
    async with slack_kit(tmp_path, script) as kit:
        ts = await kit.mention("add integration tests")
        await kit.settle()
        [card] = [m for m in kit.thread(ts) if m.buttons()]
        handle = kit.engine.handle

        async def failing(inbound: Inbound) -> None:
            if inbound.action is not None:
                raise Broken("the database is locked")
            await handle(inbound)

        kit.engine.handle = failing  # type: ignore[method-assign]
        assert await kit.click(card, "tribunal_choose", user="boss") == 200
        await kit.settle()
        [told] = kit.fake.ephemerals
        assert told["user"] == "boss" and told["thread_ts"] == ts
        assert told["text"].startswith("Something went wrong while handling your click")
    [record] = [r for r in caplog.records if r.name == "bot.slack.adapter" and r.exc_info]
    assert "task #1" in record.getMessage() and isinstance(record.exc_info[1], Broken)  # type: ignore[index]


@pytest.fixture
def settings(
    clean_settings_env: Path, tmp_path: Path, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    return write_settings(clean_settings_env, tmp_path / "data", fake, monkeypatch)


def test_no_token_reaches_the_log_whoever_logs_it() -> None:
    from bot.logs import configure_logging

    out = io.StringIO()
    token = "xoxb-1234567890-abcdefghij"
    configure_logging("INFO", "text", secrets=[token], stream=out)
    logging.getLogger("some.library").warning("calling with Authorization: Bearer %s", token)
    try:
        raise ValueError(f"refused {token}")
    except ValueError:
        logging.getLogger("bot.x").exception("failed")
    assert token not in out.getvalue() and out.getvalue().count("***") == 2
