"""A bot stand-in for tests/container/test_local_orphans.py: runs one turn on the real
LocalBackend (`python -m runners command`, whose check is the child standing in for the agent
CLI) and waits in it until the test SIGKILLs this process.

    python tests/container/programs/local_bot.py WORKSPACE CHECK_COMMAND [SPARES_FILE]

With SPARES_FILE, a first quick turn comes before it, so that the turn runs on a spare runner
started ahead (container/spares.py); the pids of the spares then waiting (the one the turn
took, and its replacement) are written to SPARES_FILE.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from container.local import LocalBackend
from runners.protocol import Check, RunRequest, RunSpec

REPO = Path(__file__).resolve().parents[3]


def turn(workspace: str, command: str) -> RunSpec:
    check = Check(id="T1", command=command, timeout_s=600.0)
    return RunSpec(
        group="g",
        agent="command",
        request=RunRequest(role="executor", prompt="checks", checks=[check]),
        workspace=workspace,
        idle_timeout_s=600.0,
        hard_timeout_s=600.0,
    )


async def spare_pids(backend: LocalBackend) -> list[int]:
    while not backend.spares.pids():
        await asyncio.sleep(0.02)
    return backend.spares.pids()


async def main(workspace: str, command: str, spares_file: str | None) -> None:
    # This checkout's runners, with the bot's spare.
    backend = LocalBackend(env={"PYTHONPATH": str(REPO)}, spares=1)
    pids: list[int] = []
    if spares_file is not None:
        async for event in backend.run(turn(workspace, "true")):
            print(event.kind, flush=True)
        pids = await spare_pids(backend)
    events = aiter(backend.run(turn(workspace, command)))
    print((await anext(events)).kind, flush=True)
    if spares_file is not None:
        pids += await spare_pids(backend)  # the replacement of the spare the turn took
        Path(spares_file).write_text(" ".join(map(str, pids)))
    async for event in events:
        print(event.kind, flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
