"""Wall time of real Codex CLI turns (`python -m runners codex`) through LocalBackend against the
fake Responses API on loopback. Not a test: run it by hand and read the numbers.

    CODEX_BIN=… .venv/bin/python -m tests.bench.bench_codex_turn [repeats]

Without CODEX_BIN it uses the folder tests/fakes/install_codex.sh fills.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from container.local import LocalBackend
from runners.protocol import RunRequest, RunSpec
from tests.fakes.codex import CODEX_BIN
from tests.fakes.responses_api import FakeResponsesAPI, has_tool_output, shell, text


async def one_turn(fake: FakeResponsesAPI, ws: Path, home: Path, *, edit: bool) -> float:
    assert CODEX_BIN is not None, "no Codex CLI: set CODEX_BIN or run tests/fakes/install_codex.sh"
    if edit:
        fake.script(~has_tool_output(), [shell("echo hi > greet.txt")])
    spec = RunSpec(
        group="bench",
        agent="codex",
        request=RunRequest(role="owner", prompt="go", read_only=not edit),
        workspace=str(ws),
        env={
            **fake.env(),
            "HOME": str(home),
            "CODEX_HOME": str(home / "codex"),
            "CODEX_BIN": CODEX_BIN,
        },
    )
    started = time.perf_counter()
    events = [e async for e in LocalBackend().run(spec)]
    elapsed = time.perf_counter() - started
    assert events[-1].kind == "final", events[-1]
    return elapsed


async def main(repeats: int) -> None:
    with FakeResponsesAPI(default=text("DONE")) as fake, tempfile.TemporaryDirectory() as tmp:
        ws, home = Path(tmp, "ws"), Path(tmp, "home")
        ws.mkdir()
        home.mkdir()
        for edit in (False, True):
            times = [await one_turn(fake, ws, home, edit=edit) for _ in range(repeats)]
            label = "owner turn with one shell call (2 model calls)" if edit else "text-only turn"
            print(
                f"{label}: median {statistics.median(times):.2f}s, "
                f"min {min(times):.2f}s, max {max(times):.2f}s over {repeats}"
            )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
