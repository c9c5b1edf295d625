"""`[dashboard] port` = TRIBUNAL_HTTP_PORT with Slack in HTTP mode: `tribunal serve` serves the
dashboard on Slack's own listener, beside /slack/events, which keeps working (signed by Slack,
not behind a session); `doctor` warns, since that listener is on every address."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import aiohttp
import pytest

from bot.doctor import check_dashboard
from bot.serve import configured_adapters, serve
from bot.settings import load_settings
from rooms.base.model import RoomRef
from tests.bot.slack.test_processes import mention, until_closed
from tests.bot.slack.test_tokens import CHANNEL, slack_settings
from tests.fakes.runner import ScriptedRunner
from tests.fakes.slack_api import fake_slack


async def test_the_dashboard_beside_slack_events_on_one_port(
    clean_settings_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with fake_slack() as fake:
        settings = slack_settings(clean_settings_env, fake, monkeypatch, socket=False)
        port = settings.http_port
        assert port is not None
        monkeypatch.setenv("TRIBUNAL_DASHBOARD__PORT", str(port))
        settings = load_settings(env_file=None)
        said = io.StringIO()
        runner = ScriptedRunner({"owner": ["DONE", "DONE\nwrapped up"], "reviewer": ["APPROVED"]})
        serving = asyncio.create_task(
            serve(settings, configured_adapters(settings), runner=runner, warn=said)
        )
        try:
            ts = "1690000900.000100"
            fake.roots.add(ts)
            await mention(port, "build it", ts)  # Slack's events: still answered
            await until_closed(settings.db_path, RoomRef("slack", CHANNEL, ts))
            assert f"the dashboard is on http://127.0.0.1:{port}" in said.getvalue()
            async with aiohttp.ClientSession() as http:
                async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                    assert response.status == 200
                    assert "slack: ok" in await response.text()
                async with http.get(f"http://127.0.0.1:{port}/", allow_redirects=False) as response:
                    assert response.status == 303  # the pages still need a session
                async with http.get(f"http://127.0.0.1:{port}/signin") as response:
                    assert "Operator token" in await response.text()
        finally:
            serving.cancel()
            with pytest.raises(asyncio.CancelledError):
                await serving
    check = check_dashboard(settings)
    assert check is not None and not check.ok and "0.0.0.0" in check.text
