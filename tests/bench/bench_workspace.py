"""The workspace hash after a turn: kept between turns vs. hashed whole, in the same run.

    .venv/bin/python -m tests.bench.bench_workspace [--sizes 1000,10000,50000] [--turns 5]

A node_modules-like tree (folders of 20 small files) of each size; each "turn" edits 3 files,
adds one and deletes one, then the hash is taken three ways, in alternating order:
- full: a one-off hash of the whole tree (`tree_hash_sync`: every file stat'ed and read), what
  every owner and reviewer turn cost before the hash was kept (the baseline);
- stat pass: the kept tree without inotify (every file stat'ed, only changed files read): the
  fallback where no watch can be had, and what `verify=True` costs;
- kept: `tree_hash` as the engine calls it (inotify names what changed; off the event loop).
All three must agree on every turn (checked). Printed: the median per turn of each, the ratio
full / kept, and the first (cold) hash of the kept tree.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from rooms.work.hashed_tree import Budget
from rooms.work.watched_tree import WatchedTree
from rooms.work.workspace import MAX_FILES, MAX_TOTAL_BYTES, _reader, tree_hash, tree_hash_sync

PER_FOLDER = 20


def make_tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / "node_modules" / f"pkg{i // PER_FOLDER:05d}" / "lib"
        if i % PER_FOLDER == 0:
            folder.mkdir(parents=True)
        (folder / f"f{i % PER_FOLDER}.js").write_text(f"module.exports = {i};\n" * 8)


def one_turn(root: Path, files: int, turn: int) -> None:
    """3 edits, 1 new file, 1 deleted file, spread over the tree."""
    for k in range(3):
        i = (turn * 7919 + k * 104729) % files
        path = root / "node_modules" / f"pkg{i // PER_FOLDER:05d}" / "lib" / f"f{i % PER_FOLDER}.js"
        if path.exists():
            path.write_text(f"// turn {turn}\n" + path.read_text())
    (root / f"new{turn}.txt").write_text(f"turn {turn}\n")
    old = root / f"new{turn - 1}.txt"
    if old.exists():
        old.unlink()


async def timed_ms(call: Awaitable[str | None]) -> tuple[float, str | None]:
    started = time.perf_counter()
    value = await call
    return (time.perf_counter() - started) * 1000, value


async def bench(files: int, turns: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-ws-") as tmp:
        root = Path(tmp) / "w"
        make_tree(root, files)
        path = os.path.realpath(root)
        cold, _ = await timed_ms(tree_hash(path))
        stat_pass = WatchedTree(path, use_inotify=False)

        def stat_hash() -> str:
            budget = Budget(bytes_left=MAX_TOTAL_BYTES, files_left=MAX_FILES)
            return stat_pass.hexdigest(_reader(None), budget)

        await asyncio.to_thread(stat_hash)
        times: dict[str, list[float]] = {"full": [], "stat": [], "kept": []}
        for turn in range(1, turns + 1):
            one_turn(root, files, turn)
            calls: dict[str, Callable[[], Awaitable[str | None]]] = {
                "full": lambda: asyncio.to_thread(tree_hash_sync, path),
                "stat": lambda: asyncio.to_thread(stat_hash),
                "kept": lambda: tree_hash(path),
            }
            order = list(calls) if turn % 2 else list(reversed(calls))
            values: set[str | None] = set()
            for name in order:
                ms, value = await timed_ms(calls[name]())
                times[name].append(ms)
                values.add(value)
            assert len(values) == 1, f"the three hashes disagree at turn {turn}"
        result = {name: statistics.median(ms) for name, ms in times.items()}
        result["cold"] = cold
        return result


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    print(f"workspace hash per turn (median of {args.turns} turns; 3 edits, 1 new, 1 deleted)")
    print(
        f"{'files':>7} | {'full (before)':>13} | {'stat pass':>10} | {'kept (after)':>12} |"
        f" {'full/kept':>9} | {'first hash':>10}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        r = await bench(size, args.turns)
        print(
            f"{size:>7} | {r['full']:>10.1f} ms | {r['stat']:>7.1f} ms | {r['kept']:>9.2f} ms |"
            f" {r['full'] / r['kept']:>8.0f}× | {r['cold']:>7.0f} ms"
        )


if __name__ == "__main__":
    asyncio.run(main())
