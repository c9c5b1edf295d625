"""Wall time of real Claude Code turns (the wheel's bundled CLI) through LocalBackend against the
fake Messages API on loopback. Not a test: run it by hand and read the numbers.

    .venv/bin/python -m tests.bench.bench_claude_turn [repeats]
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from container.local import LocalBackend
from runners.protocol import RunRequest, RunSpec
from tests.fakes.messages_api import FakeMessagesAPI, has_tool_result, text, tool_use


async def one_turn(fake: FakeMessagesAPI, ws: Path, home: Path, *, edit: bool) -> float:
    if edit:
        target = ws / "greet.py"
        target.write_text('print("hello")\n')
        change = {"file_path": str(target), "old_string": "hello", "new_string": "hi"}
        fake.script(~has_tool_result(), [tool_use("Edit", change)])
    spec = RunSpec(
        group="bench",
        agent="claude",
        request=RunRequest(role="owner", prompt="go", read_only=not edit),
        workspace=str(ws),
        env={**fake.env(), "HOME": str(home)},
    )
    started = time.perf_counter()
    events = [e async for e in LocalBackend().run(spec)]
    elapsed = time.perf_counter() - started
    assert events[-1].kind == "final", events[-1]
    return elapsed


async def main(repeats: int) -> None:
    with FakeMessagesAPI(default=text("DONE")) as fake, tempfile.TemporaryDirectory() as tmp:
        ws, home = Path(tmp, "ws"), Path(tmp, "home")
        ws.mkdir()
        home.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
        for edit in (False, True):
            times = [await one_turn(fake, ws, home, edit=edit) for _ in range(repeats)]
            label = "owner turn with one Edit (2 model calls)" if edit else "text-only turn"
            print(
                f"{label}: median {statistics.median(times):.2f}s, "
                f"min {min(times):.2f}s, max {max(times):.2f}s over {repeats}"
            )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
