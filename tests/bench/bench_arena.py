"""The arena's parallel phases and the cost of an expert turn, through the real engine and store.

    .venv/bin/python -m tests.bench.bench_arena [--experts 5] [--researchers 3] [--rounds 6]

An arena of 5 experts and 3 researchers against fakes that answer after a short, fixed delay per
actor (20–110 ms, so that running at once is visible): the moderator's panel, the researchers'
findings, the experts' messages (each a long text to the next expert, final in the last round),
the synthesizer's narrative. The same arena runs twice in the same process: as the engine runs
it (the phases run their actors at once) and, as the baseline, with one actor per driver step
(the protocol's begin_all hidden). Printed per parallel phase: its wall time, the sum of its
runs and its slowest run, and the ratios wall/slowest (goal: about 1) and wall/sum; then the
tokens (prompt characters / 4) of an expert turn in each round (goal: flat, not growing with
the thread).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import tempfile
import time
import zlib
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path

from rooms.arena.protocol import ARENA
from rooms.base.model import GroupPolicy, Inbound, RoomRef
from rooms.engine import Engine
from rooms.phased.protocol import PhasedProtocol
from rooms.store import Store
from runners.protocol import RunEvent, RunSpec
from tests.fakes.platform import RecordingPlatform
from tests.rooms.arena import scripts

ROOM = RoomRef("bench", "C1", "T1")
_ROUND = re.compile(r"Round (\d+) of at most")


class Policies:
    def __init__(self, policy: GroupPolicy) -> None:
        self.policy = policy

    def for_room(self, room: RoomRef) -> GroupPolicy | None:
        return self.policy


class TimedRunner:
    """Answers each actor after its own fixed delay; records every run's span and prompt."""

    def __init__(self, experts: int, researchers: int, rounds: int) -> None:
        self.slugs = tuple(f"expert-{i}" for i in range(1, experts + 1))
        self.researchers = researchers
        self.rounds = rounds
        self.spans: list[tuple[str, int, float, float, int]] = []  # role, round, start, end, chars

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        role, prompt = spec.request.role, spec.request.prompt
        started = time.perf_counter()
        await asyncio.sleep(0.02 + (zlib.crc32(role.encode()) % 10) * 0.01)
        found = _ROUND.search(prompt)
        rnd = int(found.group(1)) if found else 0
        body = self._answer(role, rnd)
        yield RunEvent(kind="usage", input_tokens=len(prompt) // 4, output_tokens=len(body) // 4)
        yield RunEvent(kind="final", text=body)
        self.spans.append((role, rnd, started, time.perf_counter(), len(prompt)))

    def _answer(self, role: str, rnd: int) -> str:
        if role == "moderator":
            return json.dumps(scripts.panel(self.slugs, researchers=self.researchers))
        if role == "synthesizer":
            return json.dumps(scripts.narrative())
        if role.startswith("researcher:"):
            return f"findings of {role}: " + "the billing module writes synchronously. " * 40
        slug = role.removeprefix("expert:")
        nxt = self.slugs[(self.slugs.index(slug) + 1) % len(self.slugs)]
        if rnd >= self.rounds:
            return json.dumps(scripts.final())
        text = f"Round {rnd}: " + "an argument with numbers and a precedent. " * 70
        return json.dumps(scripts.msg("challenge", f"view {rnd}", to=(nxt,), text=text))


async def arena_once(parallel: bool, experts: int, researchers: int, rounds: int) -> TimedRunner:
    runner = TimedRunner(experts, researchers, rounds)
    saved = PhasedProtocol.__dict__["begin_all"]
    if not parallel:
        del PhasedProtocol.begin_all  # type: ignore[attr-defined]  # the driver's one-actor path
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = await Store.open(str(Path(tmp) / "bench.db"))
            policy = GroupPolicy(name="bench")
            engine = Engine(store, runner, RecordingPlatform(), Policies(policy), data_dir=tmp)
            await engine.start()
            try:
                await engine.handle(
                    Inbound(
                        ROOM, "alice", "@tribunal arena Should billing move to a queue?", "e1", True
                    )
                )
                await asyncio.wait_for(engine.idle(), 600)
                task = await store.task(1)
                assert task is not None and task.status == "closed", task
            finally:
                await engine.stop()
                await store.close()
    finally:
        if not parallel:
            PhasedProtocol.begin_all = saved  # type: ignore[attr-defined]
    return runner


def phases(runner: TimedRunner) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for role, rnd, start, end, _ in runner.spans:
        if role.startswith("researcher:"):
            out["research"].append((start, end))
        elif role.startswith("expert:"):
            out[f"debate round {rnd}"].append((start, end))
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experts", type=int, default=5)
    parser.add_argument("--researchers", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    assert ARENA.name == "arena"
    together = await arena_once(True, args.experts, args.researchers, args.rounds)
    one_by_one = await arena_once(False, args.experts, args.researchers, args.rounds)
    print(f"arena: {args.experts} experts, {args.researchers} researchers, {args.rounds} rounds\n")
    print(
        f"{'phase':<16} {'runs':>4} {'wall ms':>8} {'sum ms':>8} {'slowest':>8}"
        f" {'wall/slowest':>12} {'wall/sum':>8} {'baseline wall/sum':>17}"
    )
    base = phases(one_by_one)
    for name, spans in phases(together).items():
        wall = max(e for _, e in spans) - min(s for s, _ in spans)
        total = sum(e - s for s, e in spans)
        slowest = max(e - s for s, e in spans)
        b = base.get(name, [])
        b_ratio = (
            (max(e for _, e in b) - min(s for s, _ in b)) / sum(e - s for s, e in b)
            if b
            else float("nan")
        )
        print(
            f"{name:<16} {len(spans):>4} {wall * 1000:>8.0f} {total * 1000:>8.0f}"
            f" {slowest * 1000:>8.0f}"
            f" {wall / slowest:>12.2f} {wall / total:>8.2f} {b_ratio:>17.2f}"
        )
    print(f"\n{'round':<6} {'expert turns':>12} {'tokens/turn (mean)':>19} {'min':>6} {'max':>6}")
    by_round: dict[int, list[int]] = defaultdict(list)
    for role, rnd, _, _, chars in together.spans:
        if role.startswith("expert:"):
            by_round[rnd].append(chars // 4)
    for rnd in sorted(by_round):
        values = by_round[rnd]
        mean = statistics.mean(values)
        print(f"{rnd:<6} {len(values):>12} {mean:>19.0f} {min(values):>6} {max(values):>6}")
    first, last = statistics.mean(by_round[min(by_round)]), statistics.mean(by_round[max(by_round)])
    second = statistics.mean(by_round[min(by_round) + 1]) if len(by_round) > 1 else first
    print(
        f"\nlast round / round 2 tokens per expert turn: {last / second:.2f} (round 1: {first:.0f})"
    )


if __name__ == "__main__":
    asyncio.run(main())
