"""Input per turn over a long task: what each owner and reviewer request carries, through the
real engine, prompts and session rules, against a baseline that resends the whole transcript
each turn, in the same run; and the session resume threshold (`session_chars`) chosen from it.

    .venv/bin/python -m tests.bench.bench_context [--rounds 12] [--answer-chars 1500]
                                                  [--cli-chars N]

A request is not only what Tribunal writes: Claude Code sends its own system prompt, tool
definitions and environment with every request (~50K characters). That part is measured once,
here, from a real Claude Code turn (the wheel's bundled CLI, through `python -m runners claude`)
against the fake Messages API, which records request bodies: the body's length minus the system
prompt and prompt Tribunal gave it (`--cli-chars N` skips the measurement). Every modelled
request (tests/fakes/session_model.py: a fresh session reads system prompt + prompt, a resumed
one its session + the new prompt) is that part plus Tribunal's.

The same scripted task runs once per `session_chars` candidate (with the default
`session_turns`), and the baseline resends the whole transcript over the same turns. Printed:
the whole request per turn (tokens ≈ characters / 4) at rounds 3, 6 and the last, by role, the
turns that resumed, the whole task's input, and the ratio baseline / ours at the last round.
The candidate with the least whole-task input is the one to use as the default.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
from pathlib import Path

from container.local import LocalBackend
from prompts import load_prompt
from rooms.base.model import GroupPolicy, Thresholds
from runners.claude import find_cli
from runners.protocol import RunRequest, RunSpec
from tests.fakes.engine_kit import engine_kit
from tests.fakes.live_runs import scratch_dirs
from tests.fakes.messages_api import FakeMessagesAPI, text
from tests.fakes.session_model import (
    CHARS_PER_TOKEN,
    Read,
    SessionModelRunner,
    long_task,
    transcript_baseline,
)

TASK = "@tribunal write a streaming config parser with tests"
UNBOUNDED = 10**9
CANDIDATES = (0, 1_500, 3_000, 6_000, 12_000, 24_000, UNBOUNDED)


async def cli_own_chars() -> int:
    """Characters Claude Code adds to a request: one real turn, its largest recorded body (as
    JSON) less the system prompt and prompt it was given (as JSON strings: escapes counted
    alike on both sides)."""
    cli = find_cli()
    assert cli is not None, "no Claude Code binary (claude-agent-sdk's bundled one): --cli-chars"
    system, prompt = load_prompt("owner"), "write a streaming config parser with tests"
    with FakeMessagesAPI(default=text("DONE")) as fake, scratch_dirs() as (ws, home):
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
        spec = RunSpec(
            group="bench",
            agent="claude",
            request=RunRequest(role="owner", prompt=prompt, system_prompt=system),
            workspace=str(ws),
            env={**fake.env(), "HOME": str(home)},
        )
        events = [event async for event in LocalBackend().run(spec)]
        assert events[-1].kind == "final", events[-1]
        bodies = [json.dumps(r.body, ensure_ascii=False) for r in fake.calls]
    whole = max(bodies, key=len)
    ours = [json.dumps(part, ensure_ascii=False)[1:-1] for part in (system, prompt)]  # as sent
    assert all(part in whole for part in ours), "the request does not carry our text"
    return len(whole) - sum(len(part) for part in ours)


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


def by_role(runner: SessionModelRunner, values: list[int], role: str) -> list[int]:
    return [v for r, v in zip(runner.reads, values, strict=True) if r.role == role]


CACHE_READ, CACHE_WRITE = 0.1, 1.25  # the Messages API's price of cached / newly cached input


def billed(own: int, reads: list[Read]) -> int:
    """The task's input as billed with prompt caching, in characters of full-price input:
    Claude Code marks its requests for caching, so the part an earlier request already sent
    first (its own part after the task's first request, and `Read.cached`) is read from the
    cache, and the rest is written to it."""
    total = 0.0
    for i, read in enumerate(reads):
        cached = (own if i else 0) + read.cached
        total += CACHE_READ * cached + CACHE_WRITE * (own + read.chars - cached)
    return int(total)


def k(chars: int) -> str:
    return f"{chars / CHARS_PER_TOKEN / 1000:.1f}k"


async def main(rounds: int, answer_chars: int, cli_chars: int | None) -> None:
    own = cli_chars if cli_chars is not None else await cli_own_chars()
    turns = GroupPolicy(name="defaults").session_turns
    default = GroupPolicy(name="defaults").session_chars
    runs = {chars: await run(rounds, answer_chars, turns, chars) for chars in CANDIDATES}
    system = {role: load_prompt(role) for role in ("owner", "reviewer")}
    first = runs[CANDIDATES[0]]
    resent = transcript_baseline(TASK, system, first.reads, first.answers)
    transcript = [own + c for c in resent]
    last_of: dict[str, int] = {}
    resent_reads = []  # the baseline's requests: each starts with its role's previous one
    for read, chars in zip(first.reads, resent, strict=True):
        resent_reads.append(Read(read.role, True, chars, last_of.get(read.role, 0)))
        last_of[read.role] = chars
    source = "given" if cli_chars is not None else "measured from a real Claude Code turn"
    print(f"Claude Code's own part of each request: {own:,} characters ({source})")
    print(
        f"{rounds} rounds, answers of ~{answer_chars} characters, session_turns = {turns}; "
        "whole request per turn, tokens (characters / 4)"
    )
    marks = sorted({3, 6, rounds})
    cols = "".join(f"{f'{role[0]}{r}':>8}" for role in ("owner", "reviewer") for r in marks)
    last = f"{'÷ o' + str(rounds):>7}{'÷ r' + str(rounds):>7}"
    print(f"{'session_chars':<16}{'resumed':>9}{cols}{'task':>9}{'billed':>9}{last}")

    def line(
        name: str, values: list[int], runner: SessionModelRunner, resumed: str, paid: int
    ) -> str:
        cells, last = "", []
        for role in ("owner", "reviewer"):
            mine = by_role(runner, values, role)
            cells += "".join(f"{k(mine[r - 1]) if r <= len(mine) else '-':>8}" for r in marks)
            last.append(mine[min(rounds, len(mine)) - 1])
        ratios = "".join(
            f"{b / o:>6.2f}x"
            for b, o in zip(
                [by_role(first, transcript, role)[min(rounds, n) - 1] for role, n in
                 (("owner", len(by_role(first, transcript, "owner"))),
                  ("reviewer", len(by_role(first, transcript, "reviewer"))))],
                last,
                strict=True,
            )
        )  # fmt: skip
        return f"{name:<16}{resumed:>9}{cells}{k(sum(values)):>9}{k(paid):>9}{ratios}"

    print(line("transcript", transcript, first, "-", billed(own, resent_reads)))
    totals, paid = {}, {}
    for chars, runner in runs.items():
        whole = [own + r.chars for r in runner.reads]
        totals[chars], paid[chars] = sum(whole), billed(own, runner.reads)
        name = "unbounded" if chars == UNBOUNDED else f"{chars:,}"
        name += " (default)" if chars == default else ""
        resumed = f"{sum(r.resumed for r in runner.reads)}/{len(runner.reads)}"
        print(line(name, whole, runner, resumed, paid[chars]))
    best = min(totals, key=lambda c: totals[c])
    cheapest = min(paid, key=lambda c: paid[c])
    print(
        f"least whole-task input: session_chars = {best:,} "
        f"({totals[default] / totals[best]:.2f}x less than the default {default:,}); "
        f"least billed with prompt caching: {cheapest:,} "
        f"({paid[default] / paid[cheapest]:.2f}x less than the default); "
        f"Tribunal's own part alone at the default, round {rounds}: "
        f"{by_role(runs[default], [r.chars for r in runs[default].reads], 'owner')[rounds - 1] // CHARS_PER_TOKEN:,} tokens"  # noqa: E501
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--answer-chars", type=int, default=1500)
    parser.add_argument("--cli-chars", type=int, help="Claude Code's own part, not measured")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.answer_chars, args.cli_chars))
