"""`tribunal doctor`: one line per check, exit 0 only when every required check passes; here
the settings, credentials, platforms and database lines (bot/doctor/config.py). The backend,
engine, image and runner lines are in test_engine.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.cli import main
from bot.slack.manifest import bot_scopes
from rooms.store import Store
from rooms.store.schema import LATEST
from tests.bot.doctor.kit import NOWHERE, doctor
from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, fake_slack_in_thread


def test_all_required_checks_pass(healthy: Path) -> None:
    status, lines = doctor()
    assert status == 0, lines
    assert lines["settings"].startswith("ok")
    assert lines["credentials"] == "ok (claude: ANTHROPIC_API_KEY)"
    assert lines["platforms"].startswith("ok (console only")
    assert lines["runner claude"].startswith("ok (") and "Claude Code" in lines["runner claude"]
    assert lines["database"] == f"ok ({healthy} will be created on the first run)"
    assert not healthy.exists()  # doctor looks; it does not create the database
    # No engine with the default backend (auto): said plainly, with what to do; not a failure.
    assert lines["backend"] == (
        f"local (auto), so the turns run unisolated on this host: no Docker-API engine answers "
        f"at {NOWHERE} (No such file or directory); to isolate them, start Docker or Podman "
        "and point DOCKER_HOST at its socket"
    )
    assert lines["engine"] == (
        f"not reachable at {NOWHERE}: turns would run unisolated with the local backend"
    )
    assert lines["image"] == "tribunal-runner:latest: not checked (no engine)"


def test_every_line_is_ok_or_says_what_to_do(healthy: Path) -> None:
    status, lines = doctor()
    assert list(lines) == [
        "settings",
        "credentials",
        "platforms",
        "backend",
        "engine",
        "image",
        "runner claude",
        "runner codex",
        "database",
    ]
    assert all(text for text in lines.values())


def test_invalid_settings_fail_and_name_the_field(healthy: Path) -> None:
    Path("tribunal.toml").write_text("[console.thresholds]\nround_cap = -2\n")
    status, lines = doctor()
    assert status == 1
    assert lines["settings"] == "fix: console.thresholds.round_cap: must be >= 1 (got -2)"


def test_missing_model_credentials_fail(healthy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    status, lines = doctor()
    assert status == 1
    assert lines["credentials"] == (
        "set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL) for claude (console)"
    )


def test_base_url_counts_as_credentials(healthy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    status, lines = doctor()
    assert status == 0
    assert lines["credentials"] == "ok (claude: ANTHROPIC_BASE_URL http://127.0.0.1:9)"


def test_existing_database_at_the_latest_schema(healthy: Path) -> None:
    healthy.parent.mkdir(parents=True)

    async def create() -> None:
        store = await Store.open(str(healthy))
        await store.close()

    asyncio.run(create())
    status, lines = doctor()
    assert status == 0
    assert lines["database"] == f"ok ({healthy}, schema {LATEST})"


def test_a_file_that_is_not_a_database_fails(healthy: Path) -> None:
    healthy.parent.mkdir(parents=True)
    healthy.write_bytes(b"this is not sqlite" * 100)
    status, lines = doctor()
    assert status == 1
    assert lines["database"].startswith(f"{healthy} does not open: ")
    assert healthy.read_bytes() == b"this is not sqlite" * 100  # left as it was


def test_database_that_cannot_be_created_fails(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a file where the database's folder should be (fails even as root)
    monkeypatch.setenv("TRIBUNAL_DB", str(blocker / "sub" / "tribunal.db"))
    status, lines = doctor()
    assert status == 1
    assert lines["database"] == (
        f"{blocker}/sub/tribunal.db cannot be created: {blocker} is not a folder"
    )


def test_slack_group_without_token_fails(healthy: Path) -> None:
    Path("tribunal.toml").write_text('[groups.team]\nplatform = "slack"\nchannel = "C9"\n')
    status, lines = doctor()
    assert status == 1
    assert lines["platforms"] == "set SLACK_BOT_TOKEN for the slack groups (team)"


def test_slack_needs_socket_mode_or_http_mode(
    healthy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fake_slack_in_thread() as fake:
        monkeypatch.setenv("SLACK_API_URL", fake.api_url)  # the tokens are checked there
        monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
        status, lines = doctor()
        assert status == 1
        assert lines["platforms"].startswith("set SLACK_APP_TOKEN (Socket Mode)")
        monkeypatch.setenv("SLACK_APP_TOKEN", APP_TOKEN)
        status, lines = doctor()
    assert status == 0
    assert lines["platforms"] == "ok (slack (Socket Mode), and the console room)"
    assert BOT_TOKEN not in str(lines) and APP_TOKEN not in str(lines)


def test_slack_tokens_are_checked_with_auth_test_and_missing_scopes_named(
    healthy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fake_slack_in_thread() as fake:
        api_url = fake.api_url
        monkeypatch.setenv("SLACK_API_URL", api_url)
        monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
        monkeypatch.setenv("SLACK_APP_TOKEN", APP_TOKEN)
        status, lines = doctor()
        assert status == 0
        assert lines["slack bot token"] == (
            "ok (tribunal (UBOT) in team T1, every scope the manifest asks for)"
        )
        assert lines["slack app token"] == "ok (Socket Mode connections open)"
        assert {c.method for c in fake.calls} == {"auth.test", "apps.connections.open"}

        # An app installed before files:write and chat:write.customize were added.
        fake.scopes = [s for s in bot_scopes() if s not in ("files:write", "chat:write.customize")]
        status, lines = doctor()
        assert status == 1
        assert lines["slack bot token"].startswith(
            "tribunal (UBOT) in team T1 lacks the scopes chat:write.customize, files:write:"
        )
        assert "bot/slack/manifest.yaml" in lines["slack bot token"]

        # A revoked bot token, and an app token Slack refuses.
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-revoked")
        monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-wrong")
        status, lines = doctor()
    assert status == 1
    assert lines["slack bot token"] == f"auth.test at {api_url} failed: invalid_auth"
    assert lines["slack app token"].startswith("apps.connections.open failed: invalid_auth")
    assert "xoxb-revoked" not in str(lines) and "xapp-wrong" not in str(lines)


def test_an_unreachable_slack_api_fails_the_check(
    healthy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    monkeypatch.setenv("SLACK_API_URL", f"http://127.0.0.1:{closed}/api/")
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    monkeypatch.setenv("TRIBUNAL_HTTP_PORT", "3000")
    status, lines = doctor()
    assert status == 1
    assert lines["slack bot token"].startswith(
        f"auth.test at http://127.0.0.1:{closed}/api/ failed:"
    )
    assert "slack app token" not in lines  # HTTP mode: no app token to check


def test_through_the_cli(healthy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("settings: ok")
    Path("tribunal.toml").write_text("nonsense = 1\n")
    assert main(["doctor"]) == 1
    assert "settings: fix: tribunal.toml: nonsense: unknown setting" in capsys.readouterr().out
