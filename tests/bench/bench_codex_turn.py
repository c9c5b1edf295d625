"""Wall time of real Codex CLI turns (`python -m runners codex`) through LocalBackend against the
fake Responses API on loopback. Not a test: run it by hand and read the numbers.

    CODEX_BIN=… .venv/bin/python -m tests.bench.bench_codex_turn [repeats]

Without CODEX_BIN it uses the folder tests/fakes/install_codex.sh fills.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from runners.protocol import RunSpec
from tests.fakes.live_runs import bench_spec, codex_home_env, scratch_dirs, time_turns
from tests.fakes.responses_api import FakeResponsesAPI, has_tool_output, shell, text


def turn_spec(fake: FakeResponsesAPI, ws: Path, home: Path, *, edit: bool) -> RunSpec:
    env = {**fake.env(), **codex_home_env(home)}
    if edit:
        fake.script(~has_tool_output(), [shell("echo hi > greet.txt")])
    return bench_spec("codex", ws, env, edit=edit)


async def main(repeats: int) -> None:
    with FakeResponsesAPI(default=text("DONE")) as fake, scratch_dirs() as (ws, home):
        label = "owner turn with one shell call (2 model calls)"
        await time_turns(lambda edit: turn_spec(fake, ws, home, edit=edit), repeats, label)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
