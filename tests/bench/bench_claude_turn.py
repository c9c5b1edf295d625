"""A real Claude Code turn (the wheel's bundled CLI) through `python -m runners claude` and the
LocalBackend, against the same CLI run bare, in the same run, against the fake Messages API on
loopback (it answers at once). Not a test: run it by hand and read the numbers.

    .venv/bin/python -m tests.bench.bench_claude_turn [--repeats 7] [--today DIR] [--cold]

The bare CLI is given exactly the command line, environment and stdin the runner gives it
(runners/claude.py `command`, `environment`, `input_lines`) and is read to its end: the ratio is
what Tribunal adds to a turn (the runner's start, its protocol, the backend). The two alternate
(A B A B …) so that a busy machine slows both alike; printed: each one's median and spread, the
median of the pairwise ratios, for a text-only turn and for a turn with one Edit (2 model
calls). `--today DIR` adds a third column, alternated with the two: the runner package of
another checkout (e.g. `git archive` of the code before a change, unpacked in DIR), run by the
same backend (with no spare runner: a `command` of its own). By exec in a container:
tests/bench/bench_containers.py.

The runner column runs on the LocalBackend's spare runners (container/spares.py), as the bot
does: its first turn (a warm-up, not counted) starts a runner of its own and a spare, and each
turn then takes the spare and starts the next one while it runs. Every turn of every column is
followed by `--pause` seconds, so that a spare's start falls in no other column's turn.
`--cold` adds this checkout's runner started afresh for each turn (no spare), to tell the
spare's share from the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bot.backend import LOCAL_SPARES
from container.local import LocalBackend
from runners.claude import command, environment, find_cli, input_lines
from runners.protocol import RunSpec
from tests.fakes.live_runs import bench_spec, scratch_dirs
from tests.fakes.messages_api import FakeMessagesAPI, has_tool_result, text, tool_use


def turn_spec(fake: FakeMessagesAPI, ws: Path, home: Path, *, edit: bool) -> RunSpec:
    if edit:
        target = ws / "greet.py"
        target.write_text('print("hello")\n')
        change = {"file_path": str(target), "old_string": "hello", "new_string": "hi"}
        fake.script(~has_tool_result(), [tool_use("Edit", change)])
    return bench_spec("claude", ws, {**fake.env(), "HOME": str(home)}, edit=edit)


def other_runner(folder: str) -> LocalBackend:
    """A LocalBackend that runs the `runners` package found in `folder`."""
    code = (
        f"import sys; sys.path.insert(0, {folder!r}); "
        "import runners.__main__ as m; sys.exit(m.main())"
    )
    return LocalBackend(command=[sys.executable, "-P", "-c", code])


async def runner_turn(spec: RunSpec, backend: LocalBackend | None = None) -> float:
    started = time.perf_counter()
    events = [event async for event in (backend or LocalBackend()).run(spec)]
    elapsed = time.perf_counter() - started
    assert events[-1].kind == "final", events[-1]
    return elapsed


def bare_turn(spec: RunSpec, cli: str) -> float:
    assert spec.workspace is not None
    env = environment(spec.env["HOME"], spec.workspace, {**os.environ, **spec.env})
    argv = command(spec.request, cli)
    started = time.perf_counter()
    done = subprocess.run(
        argv, input=input_lines(spec.request), capture_output=True, cwd=spec.workspace, env=env
    )
    elapsed = time.perf_counter() - started
    assert b'"type":"result"' in done.stdout, done.stderr[-2000:]
    return elapsed


def cells(runner: list[float], bare: list[float]) -> str:
    ratios = [a / b for a, b in zip(runner, bare, strict=True)]
    return (
        f"{statistics.median(runner):>9.3f}s {statistics.median(ratios):>6.2f}x "
        f"({min(ratios):.2f}–{max(ratios):.2f})"
    )


async def main(repeats: int, today: str | None, pause: float = 1.0, cold: bool = False) -> None:
    cli = find_cli()
    assert cli is not None, "no Claude Code binary (claude-agent-sdk's bundled one)"
    backends = {"runner": LocalBackend(spares=LOCAL_SPARES)}
    if cold:
        backends["runner, no spare"] = LocalBackend(spares=0)
    if today:
        backends[f"runner of {today}"] = other_runner(today)
    print(f"Claude Code {cli}; {repeats} rounds, the bare CLI and each runner alternated")
    print("each runner: median turn, median of its ratios to the bare CLI's turn of the same "
          "round (min–max)")  # fmt: skip
    header = "".join(f" | {name:>28}" for name in backends)
    print(f"{'turn':<26} {'bare CLI':>8}{header}")
    with FakeMessagesAPI(default=text("DONE")) as fake, scratch_dirs() as (ws, home):
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
        for edit, label in (
            (False, "text only (1 model call)"),
            (True, "one Edit (2 model calls)"),
        ):
            bare: list[float] = []
            times: dict[str, list[float]] = {name: [] for name in backends}
            for backend in backends.values():  # warm each
                await runner_turn(turn_spec(fake, ws, home, edit=edit), backend)
            bare_turn(turn_spec(fake, ws, home, edit=edit), cli)
            for _ in range(repeats):
                bare.append(bare_turn(turn_spec(fake, ws, home, edit=edit), cli))
                await asyncio.sleep(pause)
                for name, backend in backends.items():
                    spec = turn_spec(fake, ws, home, edit=edit)
                    times[name].append(await runner_turn(spec, backend))
                    await asyncio.sleep(pause)
            row = "".join(f" | {cells(times[name], bare):>28}" for name in backends)
            print(f"{label:<26} {statistics.median(bare):>7.3f}s{row}")
    for backend in backends.values():
        await backend.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--today", help="a folder with another checkout's runners package")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds after each turn")
    parser.add_argument("--cold", action="store_true", help="add the runner with no spare")
    args = parser.parse_args()
    asyncio.run(main(args.repeats, args.today, args.pause, args.cold))
