"""bot/hardening.py: on the local backend the bot is not dumpable, so an agent of its own user
cannot open the bot's end of a runner's pipe through /proc/<bot pid>/fd/<n> and forge events.

The attack runs as a real pair of processes (tests/bot/programs/pipe_holder.py): the holder
keeps a pipe's read end, its child of the same user, without CAP_SYS_PTRACE, opens it through
/proc and writes. As root that user is `nobody` (root could read any /proc entry anyway), on the
system's Python, as in tests/container/test_local.py. The same attack on a holder that did not
harden itself gets through: so the refusal is this module's doing."""

from __future__ import annotations

import ctypes
import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot import hardening
from bot.backend import running_backend
from bot.settings import load_settings

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

CHECKOUT = Path(__file__).parents[2]
HOLDER = Path(__file__).parent / "programs" / "pipe_holder.py"


def unprivileged(argv: list[str]) -> list[str]:
    """`argv` as a user without CAP_SYS_PTRACE: ours, or nobody when we are root."""
    if os.geteuid() != 0:
        return [sys.executable, *argv]
    python = "/usr/bin/python3.11" if Path("/usr/bin/python3.11").exists() else "python3"
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, *argv]


def attack(mode: str) -> dict[str, object]:
    done = subprocess.run(
        unprivileged([str(HOLDER), mode]),
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(CHECKOUT)},
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_an_agent_of_the_same_user_cannot_open_a_hardened_process_pipe() -> None:
    hardened = attack("harden")
    assert hardened["dumpable"] == 0
    assert hardened["agent"] == "refused: Permission denied", hardened
    assert hardened["arrived"] == ""


def test_the_same_attack_on_a_dumpable_process_gets_through() -> None:
    plain = attack("plain")
    assert plain["dumpable"] == 1
    assert plain["agent"] == "opened", plain
    assert "forged by the agent" in str(plain["arrived"])


STARTUP = """
import asyncio, io, json, sys
import bot.platforms
from bot.backend import running_backend
from bot.hardening import dumpable
from bot.settings import load_settings

async def main() -> None:
    before = dumpable()
    async with running_backend(load_settings(env_file=None), warn=io.StringIO()) as (_, choice):
        print(json.dumps({"kind": choice.kind, "before": before, "during": dumpable()}))

asyncio.run(main())
"""


def test_the_bot_starting_on_the_local_backend_makes_itself_non_dumpable(tmp_path: Path) -> None:
    """Through the real start-up (bot.backend.running_backend), in a process of its own: the
    setting turns this process's dumpable flag off for good."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIBUNAL_", "DOCKER_"))}
    env.update(
        TRIBUNAL_BACKEND="local",
        TRIBUNAL_DATA=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        PYTHONPATH=str(CHECKOUT),
    )
    done = subprocess.run(
        [sys.executable, "-c", STARTUP], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said == {"kind": "local", "before": 1, "during": 0}
    assert "dumpable" not in done.stderr  # no warning where prctl works


def test_without_prctl_the_bot_says_it_stays_dumpable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_libc(*args: object, **kwargs: object) -> ctypes.CDLL:
        raise OSError("no C library here")

    monkeypatch.setattr(hardening.ctypes, "CDLL", no_libc)
    with caplog.at_level(logging.WARNING, logger="bot.hardening"):
        assert hardening.become_undumpable() is False
    assert caplog.messages == [
        "prctl is unavailable (no C library here): the bot process stays dumpable"
    ]


def test_off_linux_the_bot_says_it_stays_dumpable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(hardening.sys, "platform", "darwin")
    with caplog.at_level(logging.WARNING, logger="bot.hardening"):
        assert hardening.become_undumpable() is False
    assert "not on Linux (darwin): the bot process stays dumpable" in caplog.messages[0]


async def test_the_local_backend_makes_the_bot_undumpable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """In this process, after tests that did the same (tests/bot/test_app.py): the flag is
    back at 1 for each test (tests/bot/conftest.py), and the local backend clears it."""
    monkeypatch.setenv("TRIBUNAL_BACKEND", "local")
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    assert hardening.dumpable() == 1
    async with running_backend(load_settings(env_file=None), warn=io.StringIO()):
        assert hardening.dumpable() == 0
