"""Wall time of real Claude Code turns (the wheel's bundled CLI) through LocalBackend against the
fake Messages API on loopback. Not a test: run it by hand and read the numbers.

    .venv/bin/python -m tests.bench.bench_claude_turn [repeats]
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from runners.protocol import RunSpec
from tests.fakes.live_runs import bench_spec, scratch_dirs, time_turns
from tests.fakes.messages_api import FakeMessagesAPI, has_tool_result, text, tool_use


def turn_spec(fake: FakeMessagesAPI, ws: Path, home: Path, *, edit: bool) -> RunSpec:
    if edit:
        target = ws / "greet.py"
        target.write_text('print("hello")\n')
        change = {"file_path": str(target), "old_string": "hello", "new_string": "hi"}
        fake.script(~has_tool_result(), [tool_use("Edit", change)])
    return bench_spec("claude", ws, {**fake.env(), "HOME": str(home)}, edit=edit)


async def main(repeats: int) -> None:
    with FakeMessagesAPI(default=text("DONE")) as fake, scratch_dirs() as (ws, home):
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
        label = "owner turn with one Edit (2 model calls)"
        await time_turns(lambda edit: turn_spec(fake, ws, home, edit=edit), repeats, label)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
