"""One engine process of a fleet sharing one database (tests/rooms/test_fleet.py, and
tests/bench/bench_fleet.py):

    python -m tests.fakes.fleet_child DB ENGINE_ID FOLDER [TURN_S [LEASE_S]]

It opens the store at DB (a PostgreSQL URL or a SQLite file), starts an engine that serves the
`test` platform, writes FOLDER/ENGINE_ID.ready, and runs until SIGTERM (then stops cleanly) or
SIGKILL. Its runner plays the same story for every task (tests/rooms/test_engine_two.py: one
round of changes, approval, the wrap-up; five turns), each turn taking TURN_S seconds, and
appends a line to FOLDER/ENGINE_ID.turns when a turn starts and when it ends. Its platform
appends one line per delivery to FOLDER/ENGINE_ID.posts (the outbox id; 0 for progress
messages) before it returns, so what the platform "accepted" is on disk. While
FOLDER/ENGINE_ID.freeze exists a new delivery never returns (a platform call hanging when the
process is killed).
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from rooms.base.model import GroupPolicy, Outbound
from rooms.engine import Engine
from rooms.store import Store
from runners.protocol import RunEvent, RunSpec
from tests.fakes.engine_kit import StaticPolicies
from tests.fakes.runner import Reply, ScriptedRunner


def story(turn_s: float) -> Callable[[RunSpec], Reply]:
    def scripted(spec: RunSpec) -> Reply:
        prompt = spec.request.prompt
        if spec.request.role == "reviewer":
            text = "APPROVED" if "handled it" in prompt else "CHANGES_REQUESTED\n- handle empty"
        elif "Your turn: wrap up" in prompt:
            text = "DONE\nwrapped up"
        elif "handle empty" in prompt:
            text = "DONE\nhandled it"
        else:
            text = "DONE\nfirst version"
        return Reply(text=text, delay=turn_s)

    return scripted


class LoggedRunner(ScriptedRunner):
    """ScriptedRunner that writes each turn's start and end (task, seq) to a file."""

    def __init__(self, log: Path, turn_s: float) -> None:
        super().__init__(decide=story(turn_s))
        self.log = log

    def _write(self, line: dict[str, object]) -> None:
        with self.log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        turn = [spec.env.get("TRIBUNAL_TASK", ""), spec.env.get("TRIBUNAL_TURN", "")]
        self._write({"start": turn, "t": time.time()})
        ended = False
        async for event in super().run(spec):
            if event.kind in ("final", "error") and not ended:
                # Before the driver has the turn's end: it may store the turn as done (and
                # never ask the runner again) before this generator resumes.
                self._write({"end": turn, "t": time.time()})
                ended = True
            yield event
        if not ended:
            self._write({"end": turn, "t": time.time()})


class FilePlatform:
    def __init__(self, log: Path, freeze: Path) -> None:
        self.log = log
        self.freeze = freeze
        self.count = 0

    async def deliver(self, message: Outbound) -> str | None:
        if self.freeze.exists():
            await asyncio.Event().wait()  # never returns: the process is about to be killed
        self.count += 1
        with self.log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"outbox_id": message.outbox_id, "edit": message.edit_of}) + "\n")
        return message.edit_of or f"{self.log.stem}-{self.count}"


async def main(db: str, engine_id: str, folder: Path, turn_s: float, lease_s: float) -> None:
    store = await Store.open(db)
    policies = StaticPolicies(GroupPolicy(name="g", approvers=frozenset({"boss"})))
    runner = LoggedRunner(folder / f"{engine_id}.turns", turn_s)
    platform = FilePlatform(folder / f"{engine_id}.posts", folder / f"{engine_id}.freeze")
    engine = Engine(store, runner, platform, policies, engine_id=engine_id, lease_s=lease_s)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await engine.start()
    (folder / f"{engine_id}.ready").write_text("ready")
    await stop.wait()
    await engine.stop()
    await store.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    turn_s = float(args[3]) if len(args) > 3 else 0.3
    lease_s = float(args[4]) if len(args) > 4 else 3.0
    asyncio.run(main(args[0], args[1], Path(args[2]), turn_s, lease_s))
