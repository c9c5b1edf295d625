"""An engine in a child process, for the crash test (tests/rooms/test_crash.py).

    python -m tests.fakes.crash_child first  DB LOG READY
    python -m tests.fakes.crash_child resume DB LOG READY

`first` opens a task and drives it until the owner's second turn, which never ends, while the
platform hangs on the reviewer's post, so that post stays pending in the outbox; then it writes
READY and waits to be killed (SIGKILL). `resume` starts an engine on the same database (with a
new engine id, so it must wait for the dead engine's lease to expire), lets it finish the task,
and exits 0. The platform appends every delivery attempt to LOG as one JSON line, with its
outbox id (0 for progress messages), so the test can count what was posted across both runs.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from rooms.base.model import GroupPolicy, Inbound, Outbound, RoomRef
from rooms.engine import Engine
from rooms.store import Store
from tests.fakes.engine_kit import StaticPolicies
from tests.fakes.runner import ScriptedRunner, hang

ROOM = RoomRef("test", "C1", "T1")
LEASE_S = 1.0


class JsonlPlatform:
    def __init__(self, log: Path, hang_on_reviewer: bool, ready: asyncio.Event) -> None:
        self.log = log
        self.hang_on_reviewer = hang_on_reviewer
        self.ready = ready
        self.count = 0

    async def deliver(self, message: Outbound) -> str | None:
        if self.hang_on_reviewer and message.outbox_id and message.persona == "reviewer":
            self.ready.set()
            await asyncio.Event().wait()  # a platform call that never returns
        self.count += 1
        line = {
            "outbox_id": message.outbox_id,
            "persona": message.persona,
            "text": message.text,
            "edit_of": message.edit_of,
        }
        with self.log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")
        return message.edit_of or f"m{self.count}-{message.outbox_id}"


async def first(db: str, log: Path, ready_file: Path) -> None:
    store = await Store.open(db)
    runner = ScriptedRunner(
        {
            "owner": ["DONE\nfirst version", hang(progress=("thinking it over",))],
            "reviewer": ["CHANGES_REQUESTED\n- add a test for the empty case"],
        }
    )
    platform_ready = asyncio.Event()
    platform = JsonlPlatform(log, hang_on_reviewer=True, ready=platform_ready)
    engine = Engine(store, runner, platform, _policies(), lease_s=LEASE_S)
    await engine.start()
    await engine.handle(Inbound(ROOM, "alice", "build it", event_id="Ev1", mentions_bot=True))
    await runner.wait_calls(3, timeout=30)  # the owner's second turn is running
    await asyncio.wait_for(platform_ready.wait(), timeout=30)
    ready_file.write_text("ready\n")
    await asyncio.Event().wait()  # until SIGKILL


async def resume(db: str, log: Path, ready_file: Path) -> None:
    store = await Store.open(db)
    runner = ScriptedRunner(
        {
            "owner": ["DONE\nsecond version, with the test", "DONE\nwrapped up"],
            "reviewer": ["APPROVED\nthe test is there"],
        }
    )
    platform = JsonlPlatform(log, hang_on_reviewer=False, ready=asyncio.Event())
    engine = Engine(store, runner, platform, _policies(), lease_s=LEASE_S)
    await engine.start()
    ready_file.write_text("started\n")
    await asyncio.wait_for(engine.idle(), timeout=60)
    await engine.stop()
    await store.close()


def _policies() -> StaticPolicies:
    return StaticPolicies(GroupPolicy(name="g", approvers=frozenset({"boss"})))


def main() -> None:
    mode, db, log, ready = sys.argv[1:5]
    run = first if mode == "first" else resume
    asyncio.run(run(db, Path(log), Path(ready)))


if __name__ == "__main__":
    main()
