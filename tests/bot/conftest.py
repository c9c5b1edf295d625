"""Every bot test starts from a clean slate: no setting leaks in from the host's environment,
and the working directory (where tribunal.toml and .env are looked up) is a fresh temp folder.

PATH hides `podman`: with `auto` and no engine the bot would start its own Podman and build the
runner image (bot/engine_owned.py), which only tests/container/test_owned_engine.py may do. A
test that wants a `podman` puts its own folder first on PATH."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import bot.platforms  # noqa: F401  (the settings read the platforms' declarations)
from bot.hardening import PR_SET_DUMPABLE, dumpable
from bot.logs import reset_logging

_SETTING_PREFIXES = ("TRIBUNAL_", "SLACK_", "DISCORD_", "ANTHROPIC_", "OPENAI_")
_SETTING_NAMES = ("DOCKER_HOST", "CODEX_BIN")


@pytest.fixture(scope="session")
def path_without_podman(tmp_path_factory: pytest.TempPathFactory) -> str:
    """PATH's commands but podman, as symlinks in one folder (built once per session)."""
    folder = tmp_path_factory.mktemp("path-without-podman")
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not Path(entry).is_dir():
            continue
        for command in Path(entry).iterdir():
            target = folder / command.name
            if command.name != "podman" and not target.exists() and not target.is_symlink():
                target.symlink_to(command)
    return str(folder)


@pytest.fixture(autouse=True)
def clean_settings_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, path_without_podman: str
) -> Path:
    monkeypatch.setenv("PATH", path_without_podman)
    for name in list(os.environ):
        if name.startswith(_SETTING_PREFIXES) or name in _SETTING_NAMES:
            monkeypatch.delenv(name)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("TRIBUNAL_CONSOLE__USER", "alice")
    return workdir


@pytest.fixture(autouse=True)
def no_log_handler_left() -> Iterator[None]:
    """A test that runs `tribunal serve` in this process leaves its log handler (on the
    redirected stderr) and levels behind otherwise (bot/logs.py)."""
    yield
    reset_logging()


@pytest.fixture(autouse=True)
def dumpable_again() -> Iterator[None]:
    """A test that runs the bot's start-up in this process (the local backend) makes pytest
    non-dumpable (bot/hardening.py); later tests get the flag back as it was."""
    before = dumpable()
    yield
    if before == 1 and dumpable() == 0:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
