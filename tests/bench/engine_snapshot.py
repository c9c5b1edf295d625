"""What the engine decides and sends, written to files, to compare two checkouts byte for byte.

    .venv/bin/python -m tests.bench.engine_snapshot OUT_DIR [--rooms 30] [--turns 10]

Writes into OUT_DIR: `replay-<fixture>.txt` and `replay-<fixture>--json.txt` (`tribunal replay`
on every transcript in tests/rooms/fixtures, run in-process so that this checkout's code is the
one measured, with its exit status), `specs.json` (every run spec bench_engine's rooms hand their
runner, prompts and system prompts included, grouped by task in turn order) and `posts.txt` (every
message handed to the platform, sorted; outbox ids left out: they follow the interleaving of the
rooms, not what was decided). A change that must not alter behaviour leaves every file the same:
run it on both checkouts and `diff -r` the two folders.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import re
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from bot.cli import main as cli
from runners.protocol import RunEvent, RunSpec
from tests.bench import bench_engine
from tests.fakes.platform import RecordingPlatform

FIXTURES = Path(__file__).parents[1] / "rooms" / "fixtures"


def replays(out: Path) -> None:
    for fixture in sorted(FIXTURES.rglob("*.json")):
        for extra in ([], ["--json"]):
            printed, errors = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
                # Relative: the error messages name the file, and must not name the checkout.
                status = cli(["replay", os.path.relpath(fixture), *extra])
            name = f"replay-{fixture.stem}{''.join(extra)}.txt"
            text = f"exit {status}\n{printed.getvalue()}{errors.getvalue()}"
            (out / name).write_text(text, encoding="utf-8")


async def engine_run(out: Path, rooms: int, rounds: int) -> tuple[int, int]:
    specs: dict[str, list[object]] = {}
    platforms: list[RecordingPlatform] = []
    instant = bench_engine.InstantRunner.run

    async def recording_run(
        self: bench_engine.InstantRunner, spec: RunSpec
    ) -> AsyncIterator[RunEvent]:
        specs.setdefault(spec.env.get("TRIBUNAL_TASK", ""), []).append(
            json.loads(spec.model_dump_json())
        )
        async for event in instant(self, spec):
            yield event

    def platform() -> RecordingPlatform:
        platforms.append(RecordingPlatform())
        return platforms[-1]

    bench_engine.InstantRunner.run = recording_run  # type: ignore[method-assign]
    bench_engine.RecordingPlatform = platform  # type: ignore[attr-defined,misc,assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            await bench_engine.run_engine(Path(tmp) / "engine.db", rooms, rounds)
    finally:
        bench_engine.InstantRunner.run = instant  # type: ignore[method-assign]
        bench_engine.RecordingPlatform = RecordingPlatform  # type: ignore[attr-defined,misc]
    by_task = dict(sorted(specs.items(), key=lambda item: int(item[0] or 0)))
    (out / "specs.json").write_text(json.dumps(by_task, indent=1, ensure_ascii=False) + "\n")
    posts = sorted(re.sub(r"outbox_id=\d+, ", "", repr(m)) for p in platforms for m in p.attempts)
    (out / "posts.txt").write_text("\n".join(posts) + "\n", encoding="utf-8")
    return sum(len(s) for s in specs.values()), len(posts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rooms", type=int, default=30)
    parser.add_argument("--turns", type=int, default=10, help="owner+reviewer turns per room")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    replays(args.out)
    specs, posts = asyncio.run(engine_run(args.out, args.rooms, max(1, args.turns // 2)))
    fixtures = len(list(FIXTURES.rglob("*.json")))
    print(f"{args.out}: replay of {fixtures} fixtures, {specs} run specs, {posts} posts")


if __name__ == "__main__":
    main()
