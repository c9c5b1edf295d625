"""`tribunal doctor`'s backend, engine, image and runner lines (bot/doctor/engine.py).

The engine, image and backend lines here talk to a fake Docker Engine API on 127.0.0.1 (ping,
version, image lookup: enough for an engine that lacks the image) through the real docker SDK,
or to a socket path where nothing is; nothing leaves the machine. The doctor against a real
engine that has the image (and runs the runner binaries in it) is in
tests/container/test_bot_docker.py."""

from __future__ import annotations

import json
import stat
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bot.doctor.engine import claude_binary
from tests.bot.doctor.kit import NOWHERE, doctor


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


# -- the engine, through the real docker SDK ---------------------------------------------------


class _FakeEngine(BaseHTTPRequestHandler):
    """Just enough of the Docker Engine API (as Podman 4.3 answers it) for version negotiation,
    a ping, an image lookup that finds no image, and a probe container that runs."""

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
        elif path.endswith("/containers/probe0/json"):
            self._send(200, b'{"Id":"probe0","Name":"/probe0"}', "application/json")
        elif "/images/" in path and path.endswith("/json"):
            name = path.split("/images/", 1)[1].removesuffix("/json")
            body = {"message": f"No such image: {name}"}
            self._send(404, json.dumps(body).encode(), "application/json")
        else:
            self.send_error(404)

    def do_POST(self) -> None:  # noqa: N802
        """The probe container (container/run_probe.py): an image import, a create, and a start
        that fails as a runtime able to run containers fails for a program that is not there."""
        path = self.path.split("?")[0]
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if path.endswith("/images/create"):
            self._send(200, b'{"status":"sha256:0123"}\n', "application/json")
        elif path.endswith("/containers/create"):
            self._send(201, b'{"Id":"probe0","Warnings":[]}', "application/json")
        elif path.endswith("/start"):
            message = (
                "runc: runc create failed: unable to start container process: exec: "
                '"/tribunal-run-probe": stat /tribunal-run-probe: no such file or directory: OCI '
                "runtime attempted to invoke a command that was not found"
            )
            self._send(500, json.dumps({"message": message}).encode(), "application/json")
        else:
            self.send_error(404)

    def do_DELETE(self) -> None:  # noqa: N802
        self._send(204, b"", "application/json")

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
    assert lines["engine"] == (
        f"ok (Podman Engine 4.3.1, API 1.41 at {fake_engine}; a probe container ran)"
    )
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
    assert lines["engine"].startswith(f"ok (Podman Engine 4.3.1, API 1.41 at {fake_engine}")
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


def test_auto_with_a_podman_that_cannot_serve_says_so_and_why(
    healthy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The doctor starts the bot's own Podman as the bot would; one that exits at once is a
    local backend (a warning), with the reason, not an "ok" on the strength of a binary."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text("#!/bin/sh\necho 'Error: cannot serve here' >&2\nexit 1\n")
    (bin_dir / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}")
    status, lines = doctor()
    assert status == 0, lines
    log = (tmp_path / "data").resolve() / "engine" / "failure.log"
    assert lines["backend"] == (
        "local (auto), so the turns run unisolated on this host: no Docker-API engine answers "
        f"at {NOWHERE} (No such file or directory), and the bot's own Podman could not be made "
        "ready: its Podman service did not start: podman system service exited with 1: Error: "
        f"cannot serve here (details in {log})"
    )
    assert lines["runner claude"].startswith("ok (")  # local turns: the host's binary counts


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
