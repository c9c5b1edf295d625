"""`tribunal serve` with Slack in a child process, on a scripted runner, for the tests that need
a second process or a SIGKILL (tests/bot/slack/test_processes.py).

    python -m tests.fakes.slack_child CONFIG SCRIPT

CONFIG is a tribunal.toml; the Slack tokens, SLACK_API_URL (the parent's fake Slack) and
TRIBUNAL_HTTP_PORT come from the environment, as in production. SCRIPT names one of `SCRIPTS`.
It runs the real `bot.serve.serve` with the adapters `configured_adapters` builds from those
settings (HTTP mode here), until SIGTERM, or until SIGKILL. The only change from production is
a short task and outbox lease, so a restarted process takes over a dead one's work in a second.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from pathlib import Path

import bot.app
from bot.serve import configured_adapters, serve
from bot.settings import load_settings
from rooms.engine import Engine
from tests.fakes.runner import Reply, Script, ScriptedRunner, hang

LEASE_S = 1.0
SCRIPTS: dict[str, Script] = {
    # The owner's turn is posted, and the parent's fake Slack kills us before we hear back.
    "first": {"owner": ["DONE\nthe turn whose post is cut off by SIGKILL"], "reviewer": [hang()]},
    # After the restart: the review and the wrap-up.
    "resume": {"owner": ["DONE\nwrapped up after the restart"], "reviewer": ["APPROVED"]},
    # One whole task, for the two-process test.
    "whole": {
        "owner": [Reply(text="DONE\nslack owner", delay=1.0), "DONE\nslack wrap-up"],
        "reviewer": ["APPROVED"],
    },
}


def main() -> None:
    config, script = sys.argv[1:3]
    bot.app.Engine = functools.partial(Engine, lease_s=LEASE_S)  # type: ignore[misc]
    settings = load_settings(Path(config), env_file=None)
    adapters = configured_adapters(settings)
    sys.exit(asyncio.run(serve(settings, adapters, runner=ScriptedRunner(SCRIPTS[script]))))


if __name__ == "__main__":
    main()
