"""Every bot test starts from a clean slate: no setting leaks in from the host's environment,
and the working directory (where tribunal.toml and .env are looked up) is a fresh temp folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_SETTING_PREFIXES = ("TRIBUNAL_", "SLACK_", "DISCORD_", "ANTHROPIC_", "OPENAI_")
_SETTING_NAMES = ("DOCKER_HOST", "CODEX_BIN")


@pytest.fixture(autouse=True)
def clean_settings_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith(_SETTING_PREFIXES) or name in _SETTING_NAMES:
            monkeypatch.delenv(name)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("TRIBUNAL_CONSOLE__USER", "alice")
    return workdir
