"""Judgment, measured (issue 21): position flips with and without the swap check, detections and
false alarms with and without `no_progress`, and what the judging costs per task.

    .venv/bin/python -m tests.bench.bench_judgment [--rooms 10] [--noise 0.1]

1. Position flips, through the real engine and store. Each stuck pair (the project's stall
   fixtures played as scripts, and generated ones with sides of random lengths, some over the
   per-side budget) is run twice: the owner's side seated as Position A, then the reviewer's
   (the harness fixes the seating the seed would draw). A flip is a case whose applied ruling
   differs between the two runs. Two scripted arbiters: one that sides with Position A, one
   that sides with the longer position (ties: A). Baseline: the same cases with the swap check
   off, in the same run. Also the arbiter turns and the arbiter's cost per task ($0.01 a
   reading here).
2. Detections and false alarms, offline through `replay` (the engine's own detectors; the
   progress judge's answers replayed as `tribunal replay --judge` does): the project's fixtures
   and a generated held-out set (tests/fakes/stall_transcripts.py) of reworded stalls, exact
   stalls and progressing pairs; a cheap judge that is right except with probability `noise`.
   Stalls caught, the mean turn they are caught at, progressing rooms interrupted, and the
   judge's calls and cost per task ($0.0005 a call), without and with `no_progress`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rooms.base.model import GroupPolicy, Thresholds
from rooms.base.words import OWNER, REVIEWER
from rooms.judge import positions
from rooms.judge.positions import Seating
from rooms.judge.replay import replay
from rooms.judge.transcript import load_transcript, parse_transcript
from rooms.pair import fairness
from runners.protocol import RunSpec
from tests.fakes.engine_kit import engine_kit
from tests.fakes.rulings import ruling_reply
from tests.fakes.runner import Reply, ScriptedRunner
from tests.fakes.stall_transcripts import OBJECTIONS, held_out, oracle_judgments

FIXTURES = Path(__file__).parents[1] / "rooms" / "fixtures"
PROGRESSING = {"progressing", "answered_then_fixed"}
JUDGE_CALL_USD = 0.0005
Judge = Callable[[str], str]  # the arbiter's prompt → PROCEED or REVISE


# --- 1. position flips ------------------------------------------------------------------------


def first_position(prompt: str) -> str:
    return _siding(prompt, "A")


def longer_position(prompt: str) -> str:
    a, b = (len(_position(prompt, x)) for x in "AB")
    return _siding(prompt, "A" if a >= b else "B")


def _position(prompt: str, letter: str) -> str:
    part = prompt.split(f"### Position {letter}\n", 1)
    return part[1].split("\n### ", 1)[0].split("\n## ", 1)[0] if len(part) > 1 else ""


def _siding(prompt: str, letter: str) -> str:
    """PROCEED when `letter` is the side PROCEED sides with, else REVISE."""
    found = re.search(r"PROCEED sides with Position ([AB])", prompt)
    assert found is not None, "the arbiter must see the positions"
    return "PROCEED" if found.group(1) == letter else "REVISE"


def _arbiter(judge: Judge) -> Callable[[RunSpec], Reply | None]:
    def decide(spec: RunSpec) -> Reply | None:
        if spec.request.role != "arbiter":
            return None
        verdict = judge(spec.request.prompt)
        fields = {"conditions": ["meet the objections"]} if verdict == "REVISE" else {}
        return ruling_reply(verdict, **fields)

    return decide


@contextmanager
def seated(first: str) -> Iterator[None]:
    """Harness control: `first` (owner or reviewer) sits as Position A, whatever the seed (each
    run draws its own), so the two runs of a case differ only in the order."""
    drawn = positions.seat
    namespace = vars(fairness)  # where the arbiter's prompt takes the seating from

    def fixed(seed: int) -> Seating:
        return Seating(seed, first)

    namespace["seat"] = fixed
    try:
        yield
    finally:
        namespace["seat"] = drawn


def stuck_cases(rng: random.Random, generated: int) -> list[tuple[str, list[str], list[str]]]:
    """(name, owner texts, reviewer texts): the stall fixtures' first rounds, and generated
    stuck pairs (the same finding twice) with sides of random lengths."""
    cases = []
    for path in sorted(FIXTURES.glob("*.json")):
        if path.stem in PROGRESSING or path.stem in ("ceiling", "blocked"):
            continue
        turns = load_transcript(str(path)).turns
        owner = [t.text for t in turns if t.role == "owner"]
        reviewer = [t.text for t in turns if t.role == "reviewer"]
        cases.append((path.stem, owner, reviewer))
    for i in range(generated):
        said = rng.choice(OBJECTIONS)
        owner_len, reviewer_len = rng.choice([200, 1500, 5000, 9000]), rng.choice([300, 2500, 7000])
        defence = ("I kept it because it is right. " * 400)[:owner_len]
        finding = f"CHANGES_REQUESTED\n- {said} " + ("It matters. " * 800)[:reviewer_len]
        cases.append((f"generated-{i}", [f"DONE\n{defence}"] * 2, [finding] * 2))
    return cases


async def one_ruling(
    owner: list[str], reviewer: list[str], judge: Judge, *, swap_check: bool, swapped: bool
) -> tuple[str, int, float]:
    """The first applied ruling, the arbiter turns it took, and their cost."""
    policy = GroupPolicy(
        name="bench",
        approvers=frozenset({"boss"}),
        swap_check=swap_check,
        thresholds=Thresholds(repeated_findings_rounds=1, round_cap=20),
    )
    script = {"owner": [*owner, *["DONE\nmet them"] * 4], "reviewer": [*reviewer, "APPROVED"] * 2}
    runner = ScriptedRunner(script, decide=_arbiter(judge))
    with tempfile.TemporaryDirectory() as tmp, seated(REVIEWER if swapped else OWNER):
        async with engine_kit(Path(tmp), policy=policy, runner=runner) as kit:
            await kit.say("@tribunal do the task")
            await kit.settle(60)
            verdicts = await kit.store.verdicts(1)
            if not verdicts:
                return "none", 0, 0.0
            first = verdicts[0]
            arbiters = [t for t in await kit.store.turns(1) if t.role == "arbiter"]
            readings = [t for t in arbiters if t.seq <= first.turn_seq]
            costs = await kit.store.turn_costs(1)
            return first.ruling.verdict, len(readings), sum(costs[t.id] for t in readings)


async def flips(cases: list[tuple[str, list[str], list[str]]]) -> list[dict[str, Any]]:
    """Per judge and swap-check setting: the cases ruled in both seatings, the flips among
    them, and the arbiter turns and cost per ruling (a case the engine never sent to the arbiter
    in one of the runs is left out)."""
    rows = []
    for judge_name, judge in (("prefers A", first_position), ("prefers longer", longer_position)):
        for swap_check in (False, True):
            ruled, flipped, readings, cost = 0, 0, 0, 0.0
            verdicts: dict[str, int] = {}
            for _name, owner, reviewer in cases:
                got = [
                    await one_ruling(owner, reviewer, judge, swap_check=swap_check, swapped=s)
                    for s in (False, True)
                ]
                if any(v == "none" for v, _, _ in got):
                    continue
                ruled += 1
                flipped += got[0][0] != got[1][0]
                for v, n, c in got:
                    readings, cost = readings + n, cost + c
                    verdicts[v] = verdicts.get(v, 0) + 1
            runs = max(2 * ruled, 1)
            rows.append(
                {
                    "judge": judge_name,
                    "swap check": "on" if swap_check else "off (baseline)",
                    "cases ruled": ruled,
                    "flips": flipped,
                    "flip rate": flipped / max(ruled, 1),
                    "arbiter turns/ruling": readings / runs,
                    "arbiter $/task": cost / runs,
                    "verdicts": verdicts,
                }
            )
    return rows


# --- 2. detections and false alarms -----------------------------------------------------------


class Asked(dict[int, str]):
    """Recorded judgments that remember which reviews the replay asked about (= judge calls)."""

    def __init__(self, answers: dict[int, str]) -> None:
        super().__init__(answers)
        self.asked: set[int] = set()

    def get(self, key: int, default: Any = None) -> Any:  # type: ignore[override]
        self.asked.add(key)
        return super().get(key, default)


def detections(rooms: list[tuple[str, Any, bool]], noise: float, seed: int) -> list[dict[str, Any]]:
    rows = []
    for with_judge in (False, True):
        rng = random.Random(seed)
        caught, turns, false_alarms, calls, stalls, progressing = 0, [], 0, 0, 0, 0
        for _name, room, stall in rooms:
            transcript = parse_transcript(json.dumps(room["transcript"]))
            judged = Asked(oracle_judgments(room["room"], noise=noise, rng=rng))
            out = replay(transcript, judgments=judged if with_judge else None)
            calls += len(judged.asked)
            fired = [r.turn for r in out if r.deadlock]
            if stall:
                stalls += 1
                if fired:
                    caught += 1
                    turns.append(fired[0])
            else:
                progressing += 1
                false_alarms += bool(fired)
        rows.append(
            {
                "no_progress": "on" if with_judge else "off (baseline)",
                "stalls": stalls,
                "caught": caught,
                "mean turn caught": sum(turns) / len(turns) if turns else float("nan"),
                "progressing": progressing,
                "false alarms": false_alarms,
                "judge calls/task": calls / len(rooms),
                "judge $/task": calls * JUDGE_CALL_USD / len(rooms),
            }
        )
    return rows


def detection_rooms(each: int) -> list[tuple[str, Any, bool]]:
    from tests.fakes.stall_transcripts import Room

    rooms: list[tuple[str, Any, bool]] = []
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text())
        kind = "progress" if path.stem in PROGRESSING else "fixture_stall"
        rooms.append(
            (path.stem, {"transcript": data, "room": Room(kind, data)}, kind != "progress")
        )
    for r in held_out(each=each):
        rooms.append((r.kind, {"transcript": r.transcript, "room": r}, r.stall))
    return rooms


# --- the table ----------------------------------------------------------------------------------


def table(rows: list[dict[str, Any]]) -> str:
    heads = list(rows[0])
    cells = [heads] + [[_fmt(r[h]) for h in heads] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(heads))]
    return "\n".join("  ".join(c[i].rjust(widths[i]) for i in range(len(heads))) for c in cells)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if value < 0.1 else f"{value:.2f}"
    if isinstance(value, dict):
        return " ".join(f"{k}:{v}" for k, v in sorted(value.items()))
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=10, help="generated rooms of each kind")
    parser.add_argument("--noise", type=float, default=0.1, help="the judge's error rate")
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    started = time.monotonic()
    cases = stuck_cases(random.Random(args.seed), args.rooms)
    print(f"Position flips: {len(cases)} stuck pairs, each ruled with the sides seated both ways")
    flip_rows = asyncio.run(flips(cases))
    print(table(flip_rows))
    for judge in ("prefers A", "prefers longer"):
        off, on = (r for r in flip_rows if r["judge"] == judge)
        cost = on["arbiter $/task"] / off["arbiter $/task"] if off["arbiter $/task"] else 0.0
        print(
            f"  {judge}: flips {off['flips']} → {on['flips']} with the swap check, "
            f"arbiter cost ×{cost:.2f}"
        )
    rooms = detection_rooms(args.rooms)
    print(f"\nDetections: {len(rooms)} rooms (fixtures + held-out), judge noise {args.noise}")
    det_rows = detections(rooms, args.noise, args.seed)
    print(table(det_rows))
    off, on = det_rows
    print(
        f"  caught {off['caught']}/{off['stalls']} → {on['caught']}/{on['stalls']}, false alarms "
        f"{off['false alarms']} → {on['false alarms']}, judge ${on['judge $/task']:.4f}/task"
    )
    print(f"\n({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
