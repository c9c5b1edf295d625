"""What the doctor's tests share: run it and read its lines by name, and settings that pass
every required check."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from bot.doctor import run_doctor

NOWHERE = "unix:///nonexistent/tribunal-test/docker.sock"


def doctor(config: Path | None = None) -> tuple[int, dict[str, str]]:
    out = io.StringIO()
    status = run_doctor(config, out=out)
    lines = out.getvalue().splitlines()
    return status, dict(line.split(": ", 1) for line in lines)


def healthy_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Settings that pass every required check: a key, a database folder, no engine needed."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("DOCKER_HOST", NOWHERE)
    # No podman on PATH, so `auto` has no engine of its own either (test_engine.py adds one).
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    return tmp_path / "data" / "tribunal.db"
