"""A bot stand-in for tests/container/test_local_orphans.py: runs one turn on the real
LocalBackend (`python -m runners command`, whose check is the child standing in for the agent
CLI) and waits in it until the test SIGKILLs this process.

    python tests/container/programs/local_bot.py WORKSPACE CHECK_COMMAND
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from container.local import LocalBackend
from runners.protocol import Check, RunRequest, RunSpec

REPO = Path(__file__).resolve().parents[3]


async def main(workspace: str, command: str) -> None:
    check = Check(id="T1", command=command, timeout_s=600.0)
    spec = RunSpec(
        group="g",
        agent="command",
        request=RunRequest(role="executor", prompt="checks", checks=[check]),
        workspace=workspace,
        idle_timeout_s=600.0,
        hard_timeout_s=600.0,
    )
    backend = LocalBackend(env={"PYTHONPATH": str(REPO)})  # this checkout's runners
    async for event in backend.run(spec):
        print(event.kind, flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
