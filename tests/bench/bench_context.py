"""Input per turn over a long task: what each owner and reviewer turn reads (its session plus
its prompt, modelled by tests/fakes/session_model.py) through the real engine, prompts and
session rules, against a baseline that resends the whole transcript each turn, in the same run.

    .venv/bin/python -m tests.bench.bench_context [--rounds 12] [--answer-chars 1500]

Three runs of the same scripted task: resending the transcript (the baseline, computed over the
same turns), sessions resumed without a bound (every turn resumes and is sent only the turns
that are new to it), and the default bounds (`session_turns` = 3, `session_chars` = 3000).
Printed: tokens read per turn (≈ characters / 4) by role at rounds 3, 6 and 12, and the ratio
baseline / bounded.
Goal: flat per turn, ≥ 4× fewer than the baseline at round 12.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from prompts import load_prompt
from rooms.base.model import GroupPolicy, Thresholds
from tests.fakes.engine_kit import engine_kit
from tests.fakes.session_model import (
    CHARS_PER_TOKEN,
    SessionModelRunner,
    long_task,
    transcript_baseline,
)

TASK = "@tribunal write a streaming config parser with tests"


async def run(
    rounds: int, answer_chars: int, session_turns: int, session_chars: int
) -> SessionModelRunner:
    runner = SessionModelRunner(long_task(rounds, answer_chars))
    policy = GroupPolicy(
        name="g",
        approvers=frozenset({"boss"}),
        thresholds=Thresholds(round_cap=rounds + 5, max_turns=10 * rounds),
        session_turns=session_turns,
        session_chars=session_chars,
    )
    with tempfile.TemporaryDirectory() as tmp:
        async with engine_kit(Path(tmp), policy=policy, runner=runner) as kit:  # type: ignore[arg-type]
            await kit.say(TASK)
            await kit.settle(timeout=120)
            task = await kit.task()
            assert task.status == "closed", (task.status, [r.role for r in runner.reads])
    return runner


def by_round(runner: SessionModelRunner, values: list[int], role: str) -> list[int]:
    return [v for r, v in zip(runner.reads, values, strict=True) if r.role == role]


async def main(rounds: int, answer_chars: int) -> None:
    defaults = GroupPolicy(name="defaults")
    bounded = await run(rounds, answer_chars, defaults.session_turns, defaults.session_chars)
    unbounded = await run(rounds, answer_chars, 10**6, 10**9)
    system = {role: load_prompt(role) for role in ("owner", "reviewer")}
    baseline = transcript_baseline(TASK, system, bounded.reads, bounded.answers)
    print(f"{rounds} rounds, answers of ~{answer_chars} characters; tokens read per turn")
    header = (
        f"{'role':>8} {'round':>5} {'transcript':>11} {'unbounded':>10} {'bounded':>8} {'ratio':>6}"
    )
    print(header)
    for role in ("owner", "reviewer"):
        base = by_round(bounded, baseline, role)
        ours = by_round(bounded, [r.chars for r in bounded.reads], role)
        free = by_round(unbounded, [r.chars for r in unbounded.reads], role)
        for r in sorted({3, 6, rounds}):
            if r > len(ours):
                continue
            b, o, f = (x[r - 1] // CHARS_PER_TOKEN for x in (base, ours, free))
            print(f"{role:>8} {r:>5} {b:>11,} {f:>10,} {o:>8,} {b / o:>5.1f}×")
        worst = max(ours[:rounds]) // CHARS_PER_TOKEN
        print(
            f"{role:>8}   max {max(base[:rounds]) // CHARS_PER_TOKEN:>11,} "
            f"{max(free[:rounds]) // CHARS_PER_TOKEN:>10,} {worst:>8,}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--answer-chars", type=int, default=1500)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.answer_chars))
