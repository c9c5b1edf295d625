"""`tribunal doctor`: one line per check, exit 0 only when every required check passes.

The engine, image and backend lines here talk to a fake Docker Engine API on 127.0.0.1 (ping,
version, image lookup: enough for an engine that lacks the image) through the real docker SDK,
or to a socket path where nothing is; nothing leaves the machine. The doctor against a real
engine that has the image (and runs the runner binaries in it) is in
tests/container/test_bot_docker.py."""

from __future__ import annotations

import asyncio
import io
import json
import stat
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bot.cli import main
from bot.doctor import claude_binary, run_doctor
from bot.slack.manifest import bot_scopes
from rooms.store import Store
from rooms.store.schema import LATEST
from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, fake_slack_in_thread

NOWHERE = "unix:///nonexistent/tribunal-test/docker.sock"


def doctor(config: Path | None = None) -> tuple[int, dict[str, str]]:
    out = io.StringIO()
    status = run_doctor(config, out=out)
    lines = out.getvalue().splitlines()
    return status, dict(line.split(": ", 1) for line in lines)


@pytest.fixture
def healthy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Settings that pass every required check: a key, a database folder, no engine needed."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("DOCKER_HOST", NOWHERE)
    # No podman on PATH, so `auto` has no engine of its own either (tests below add one).
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    return tmp_path / "data" / "tribunal.db"


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


def test_codex_group_needs_openai_credentials_and_the_binary(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIBUNAL_CONSOLE__REVIEWER__AGENT", "codex")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no codex anywhere
    status, lines = doctor()
    assert status == 1
    assert "set OPENAI_API_KEY (or OPENAI_BASE_URL) for codex (console)" in lines["credentials"]
    assert lines["runner codex"].startswith("install the Codex CLI")


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_codex_binary_version_is_run(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIBUNAL_CONSOLE__OWNER__AGENT", "codex")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    good = _script(tmp_path / "codex-good", 'echo "codex-cli 9.9.9"')
    monkeypatch.setenv("TRIBUNAL_CODEX_BIN", str(good))
    status, lines = doctor()
    assert status == 0, lines
    assert lines["runner codex"] == f"ok (codex-cli 9.9.9, {good})"

    broken = _script(tmp_path / "codex-broken", 'echo "cannot start" >&2; exit 3')
    monkeypatch.setenv("TRIBUNAL_CODEX_BIN", str(broken))
    status, lines = doctor()
    assert status == 1
    assert (
        lines["runner codex"] == f"fix the Codex CLI: `{broken} --version` exited 3: cannot start"
    )


def test_unused_codex_is_not_required(healthy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    status, lines = doctor()
    assert status == 0
    assert lines["runner codex"] == "not found (not needed: no group uses codex here)"


def test_claude_binary_is_the_bundled_one() -> None:
    binary = claude_binary()
    assert binary is not None and binary.name == "claude" and "_bundled" in binary.parts


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


# -- the engine, through the real docker SDK ---------------------------------------------------


class _FakeEngine(BaseHTTPRequestHandler):
    """Just enough of the Docker Engine API (as Podman 4.3 answers it) for version negotiation,
    a ping, and an image lookup that finds no image."""

    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        path = self.path.split("?")[0]
        if path.endswith("/_ping"):
            self._send(200, b"OK", "text/plain")
        elif path.endswith("/version"):
            body = {
                "ApiVersion": "1.41",
                "Version": "4.3.1",
                "MinAPIVersion": "1.24",
                "Components": [{"Name": "Podman Engine", "Version": "4.3.1"}],
            }
            self._send(200, json.dumps(body).encode(), "application/json")
        elif "/images/" in path and path.endswith("/json"):
            name = path.split("/images/", 1)[1].removesuffix("/json")
            body = {"message": f"No such image: {name}"}
            self._send(404, json.dumps(body).encode(), "application/json")
        else:
            self.send_error(404)

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_engine() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeEngine)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_reachable_engine_without_the_image(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, fake_engine: str
) -> None:
    monkeypatch.setenv("DOCKER_HOST", fake_engine)
    status, lines = doctor()
    assert status == 0, lines  # auto falls back to local: a warning, not a failure
    assert lines["engine"] == f"ok (Podman Engine 4.3.1, API 1.41 at {fake_engine})"
    assert lines["image"] == (
        "tribunal-runner:latest is missing on the engine: run `tribunal image build`"
    )
    assert lines["backend"] == (
        f"local (auto), so the turns run unisolated on this host: the engine at {fake_engine} "
        "has no image tribunal-runner:latest (not found); to isolate them, run `tribunal image "
        "build` (or set TRIBUNAL_DOCKER__IMAGE to the runner image)"
    )
    # The turns would run here, so the host's binaries are what counts.
    assert (
        lines["runner claude"].startswith("ok (") and "in the image" not in lines["runner claude"]
    )


def test_engine_from_toml_docker_host(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, fake_engine: str
) -> None:
    monkeypatch.delenv("DOCKER_HOST")  # it would win over the file
    Path("tribunal.toml").write_text(f'[docker]\nhost = "{fake_engine}"\nimage = "mine:1"\n')
    status, lines = doctor()
    assert lines["engine"] == f"ok (Podman Engine 4.3.1, API 1.41 at {fake_engine})"
    assert lines["image"] == "mine:1 is missing on the engine: run `tribunal image build`"


def test_docker_backend_requires_the_engine(healthy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    status, lines = doctor()
    assert status == 1
    assert lines["backend"].startswith(
        f"docker (set by TRIBUNAL_BACKEND) cannot run: no Docker-API engine answers at {NOWHERE}"
    )
    assert lines["engine"] == (
        f"not reachable at {NOWHERE} (No such file or directory): start Docker or Podman, "
        "or set DOCKER_HOST"
    )
    # The runner binaries live in the image then, and there is none to look into.
    assert lines["runner claude"] == "not checked: no usable image"
    assert lines["runner codex"] == "not checked: no usable image"


def test_docker_backend_requires_the_image(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, fake_engine: str
) -> None:
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    monkeypatch.setenv("DOCKER_HOST", fake_engine)
    status, lines = doctor()
    assert status == 1
    assert lines["engine"].startswith("ok (Podman Engine 4.3.1")
    assert lines["image"] == (
        "tribunal-runner:latest is missing on the engine: run `tribunal image build`"
    )
    assert lines["backend"] == (
        f"docker (set by TRIBUNAL_BACKEND) cannot run: the engine at {fake_engine} has no image "
        "tribunal-runner:latest (not found): run `tribunal image build` (or set "
        "TRIBUNAL_DOCKER__IMAGE to the runner image)"
    )


def test_local_backend_needs_no_engine(healthy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIBUNAL_BACKEND", "local")
    status, lines = doctor()
    assert status == 0
    assert lines["backend"] == "ok (local, set by TRIBUNAL_BACKEND; the turns run unisolated here)"
    assert lines["engine"] == f"not reachable at {NOWHERE}: not needed with TRIBUNAL_BACKEND=local"


def test_through_the_cli(healthy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("settings: ok")
    Path("tribunal.toml").write_text("nonsense = 1\n")
    assert main(["doctor"]) == 1
    assert "settings: fix: tribunal.toml: nonsense: unknown setting" in capsys.readouterr().out


def test_auto_with_podman_installed_says_the_bot_starts_its_own(
    healthy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text("#!/bin/sh\nexit 1\n")  # the doctor only looks for it
    (bin_dir / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}")
    status, lines = doctor()
    assert status == 0, lines
    sock = (tmp_path / "data").resolve() / "engine" / "podman.sock"
    assert lines["backend"] == (
        f"ok (docker on the bot's own Podman: no Docker-API engine answers at {NOWHERE} (No such "
        f"file or directory); podman is installed, so the bot starts its service on {sock} and "
        "builds the image there)"
    )
    assert lines["runner claude"] == "not checked: no usable image"


def test_local_backend_never_counts_on_the_bots_podman(
    healthy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}")
    monkeypatch.setenv("TRIBUNAL_BACKEND", "local")
    status, lines = doctor()
    assert status == 0, lines
    assert "bot's own Podman" not in lines["backend"]
