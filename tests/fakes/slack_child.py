"""`tribunal serve` with Slack (or Discord) in a child process, on a scripted runner, for the
tests that need a second process or a SIGKILL (tests/bot/slack/test_processes.py,
tests/bot/discord/test_webhook_crash.py).

    python -m tests.fakes.slack_child CONFIG SCRIPT

CONFIG is a tribunal.toml; the Slack tokens, SLACK_API_URL (the parent's fake Slack) and
TRIBUNAL_HTTP_PORT (or DISCORD_BOT_TOKEN and DISCORD_API_URL) come from the environment, as in
production. SCRIPT names one of `SCRIPTS`, or "every_task" (the same story for every task).
It runs the real `bot.serve.serve` with the adapters `configured_adapters` builds from those
settings (HTTP mode here), until SIGTERM, or until SIGKILL. With SLACK_CHILD_GATE_FILE set,
the "whole" script's first owner turn ends only once that file exists. The only change from
production is a short task and outbox lease (SLACK_CHILD_LEASE_S, default 1 s), so a restarted
process takes over a dead one's work in a second; a test where no process dies passes a lease
longer than itself, so a heartbeat late under load cannot hand a running turn or a row in
delivery over.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from pathlib import Path

import bot.app
import bot.discord.factory
from bot.serve import configured_adapters, serve
from bot.settings import load_settings
from rooms.engine import Engine
from runners.protocol import RunSpec
from tests.fakes.runner import Reply, Script, ScriptedRunner, hang

LEASE_S = float(os.environ.get("SLACK_CHILD_LEASE_S", "1.0"))
GATE = asyncio.Event()  # created outside a loop: fine on 3.10+, bound when first awaited
SCRIPTS: dict[str, Script] = {
    # The owner's turn is posted, and the parent's fake Slack kills us before we hear back.
    "first": {"owner": ["DONE\nthe turn whose post is cut off by SIGKILL"], "reviewer": [hang()]},
    # After the restart: the review and the wrap-up.
    "resume": {"owner": ["DONE\nwrapped up after the restart"], "reviewer": ["APPROVED"]},
    # A turn that shows progress and never ends: the parent kills us while it works.
    "progress_hang": {"owner": [Reply(progress=("reading the code",), hang=True)]},
    # After that restart: the owner's turn runs again, then the review and the wrap-up.
    "progress_resume": {
        "owner": ["DONE\nbuilt after the restart", "DONE\nwrapped up"],
        "reviewer": ["APPROVED"],
    },
    # A role's post (a Discord webhook's) reaches Discord, and the parent kills us first.
    "webhook_first": {
        "owner": ["DONE\nthe owner's post cut off by SIGKILL"],
        "reviewer": [hang()],
    },
    # One whole task, for the two-process test; its first turn ends once GATE_FILE exists.
    "whole": {
        "owner": [Reply(text="DONE\nslack owner", gate=GATE), "DONE\nslack wrap-up"],
        "reviewer": ["APPROVED"],
    },
}


def every_task(spec: RunSpec) -> str:
    """The same short story for every task, on whichever process runs it: built, approved,
    wrapped up (the "every_task" script: tests/bot/discord/test_shard_processes.py)."""
    if spec.request.role == "reviewer":
        return "APPROVED"
    return "DONE\nwrapped up" if "Your turn: wrap up" in spec.request.prompt else "DONE\nbuilt it"


def runner_for(script: str) -> ScriptedRunner:
    if script == "every_task":
        return ScriptedRunner(decide=every_task)
    return ScriptedRunner(SCRIPTS[script])


async def _open_gate_when(path: Path) -> None:
    while not path.exists():
        await asyncio.sleep(0.05)
    GATE.set()


async def _serve(config: str, script: str) -> int:
    gate_file = os.environ.get("SLACK_CHILD_GATE_FILE")
    opener = asyncio.create_task(_open_gate_when(Path(gate_file))) if gate_file else None
    if opener is None:
        GATE.set()
    settings = load_settings(Path(config), env_file=None)
    adapters = configured_adapters(settings)
    try:
        return await serve(settings, adapters, runner=runner_for(script))
    finally:
        if opener is not None:
            opener.cancel()


def main() -> None:
    config, script = sys.argv[1:3]
    bot.app.Engine = functools.partial(Engine, lease_s=LEASE_S)  # type: ignore[misc]
    bot.discord.factory.GUILD_READY_S = 0.05  # the fake Discord sends its one guild at once
    sys.exit(asyncio.run(_serve(config, script)))


if __name__ == "__main__":
    main()
