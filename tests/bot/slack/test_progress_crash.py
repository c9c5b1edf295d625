"""Progress messages end in a final state, also after a crash (issue 27, item 11).

`serve` (a real child process, tests/fakes/slack_child.py) shows a turn's progress in Slack and
is killed (SIGKILL) or stopped (SIGTERM) while the turn works. Before, that message said
"⏳ owner is working" for ever. Now the restarted bot edits it to "owner was interrupted", runs
the turn again, and every progress message of the thread ends finished or interrupted.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from pathlib import Path

import pytest

from rooms.base.model import RoomRef
from tests.bot.slack.test_processes import (
    CHANNEL,
    free_port,
    mention,
    serve_child,
    until_closed,
    until_delivered,
    write_config,
)
from tests.fakes.slack_api import fake_slack

WORKING = "⏳ owner is working (turn 1)"


async def progress_recorded(db: Path) -> None:
    """Until the bot has recorded its progress message on the turn (it has heard back from
    Slack): killing it before then is the one gap progress has, as it is not in the outbox."""
    async with asyncio.timeout(30):
        while True:
            with sqlite3.connect(db) as raw:
                try:
                    rows = raw.execute(
                        "SELECT 1 FROM turns WHERE progress_message IS NOT NULL"
                    ).fetchall()
                except sqlite3.OperationalError:  # a bot that keeps no such record
                    return
            if rows:
                return
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM])
async def test_a_turn_cut_off_by_a_restart_leaves_no_message_working(
    tmp_path: Path, stop: signal.Signals
) -> None:
    config, port, ts = write_config(tmp_path), free_port(), "1690000800.000100"
    room = RoomRef("slack", CHANNEL, ts)
    db = tmp_path / "tribunal.db"
    async with fake_slack() as fake:
        fake.roots.add(ts)
        async with serve_child(config, "progress_hang", fake, port) as first:
            await mention(port, "read the code", ts)
            await fake.wait_for(lambda: any(WORKING in m.text for m in fake.thread(CHANNEL, ts)))
            await progress_recorded(db)
            [working] = [m for m in fake.thread(CHANNEL, ts) if WORKING in m.text]
            first.send_signal(stop)
            async with asyncio.timeout(30):
                await first.wait()

        async with serve_child(config, "progress_resume", fake, port):
            await until_closed(db, room)
            await until_delivered(db, "slack")
            await fake.wait_for(lambda: not fake.messages[working.ts].text.startswith("⏳"))
        assert fake.messages[working.ts].text.startswith("owner was interrupted (turn 1")
        progress = [m for m in fake.thread(CHANNEL, ts) if m.updates or "working" in m.text]
        assert len(progress) >= 2  # the one cut off and those of the turns after the restart
        still = [m.text for m in progress if m.text.startswith("⏳")]
        assert not still, still
