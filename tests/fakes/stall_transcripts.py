"""A generated, held-out set of rooms for the judgment measurements (tests/rooms/test_disputes.py,
tests/bench/bench_judgment.py): seeded, so a run is reproducible, and never tuned against.

- `reworded_stall`: the same objection and the same defence in new words every round, the tree
  changed cosmetically, no finding ids: a stall from round 1 that the content detectors miss;
- `exact_stall`: the same round again and again (the content detectors' case);
- `progress`: each round fixes the last finding and the reviewer raises a new, different one,
  then approves: any firing before the approval is a false alarm.

Each is a transcript dict (DESIGN §10) with `kind` beside it, and `disputes`: the owner's
structured disputes (finding id → evidence) per owner turn index, for the runs that need them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

OBJECTIONS = [
    "The retry loop never gives up on a dead server.",
    "Requests are still repeated without any limit at all.",
    "Nothing caps how often we dial the host again.",
    "A broken upstream keeps us reconnecting forever, it seems.",
    "There is no ceiling on redial attempts yet.",
    "Unlimited reconnection remains: please bound it.",
    "The client may hammer the host endlessly still.",
    "Still no maximum for the number of tries.",
    "Infinite retries are the problem I keep pointing at.",
    "We need an upper bound on reconnects; it is missing.",
]
DEFENCES = [
    "The retry is intended: the server comes back eventually.",
    "Reconnecting forever is what operators asked for, I kept it.",
    "I believe unbounded retries are fine for this daemon.",
    "Left the loop as is; a cap would drop messages.",
    "No change to the retry policy: it matches the spec as I read it.",
    "Kept retrying without a limit, with a clearer comment.",
    "The loop stays; I only reworded the docstring.",
    "Endless reconnects are deliberate here, see the comment.",
    "I disagree that a limit is needed, so nothing changed there.",
    "The retry behaviour is unchanged; it is by design.",
]
TOPICS = [
    "the parser drops the last line of the file",
    "the config loader ignores environment overrides",
    "timestamps are written in local time instead of UTC",
    "the CLI exits 0 when the input file is missing",
    "a failed upload leaves a temporary file behind",
    "the cache key ignores the query string",
    "errors from the database are swallowed silently",
    "the log rotation never deletes old files",
    "unicode file names crash the exporter",
    "the progress bar overflows past 100 percent",
]


@dataclass
class Room:
    kind: str  # reworded_stall, exact_stall, progress
    transcript: dict[str, Any]
    # owner turn index → {finding id: evidence}
    disputes: dict[int, dict[str, str]] = field(default_factory=dict)

    @property
    def stall(self) -> bool:
        return self.kind != "progress"


def _turn(role: str, text: str, tree: str) -> dict[str, str]:
    return {"role": role, "text": text, "tree": tree}


def reworded_stall(rng: random.Random, rounds: int) -> Room:
    objections, defences = rng.sample(OBJECTIONS, rounds), rng.sample(DEFENCES, rounds)
    turns, disputes = [], {}
    for i in range(rounds):
        turns.append(_turn("owner", f"DONE\n{defences[i]}", f"tree-{rng.random():.12f}"))
        if i:
            disputes[len(turns) - 1] = {"F1": f"`pytest tests/test_net.py` → {3 + i} passed"}
        turns.append(_turn("reviewer", f"CHANGES_REQUESTED\n- {objections[i]}", turns[-1]["tree"]))
    return Room("reworded_stall", {"task": "make the client retry", "turns": turns}, disputes)


def exact_stall(rng: random.Random, rounds: int) -> Room:
    topic = rng.choice(TOPICS)
    turns = []
    for _ in range(rounds):
        turns.append(_turn("owner", "DONE\nI believe it is correct as written.", "tree-same"))
        turns.append(_turn("reviewer", f"CHANGES_REQUESTED\n- {topic}", "tree-same"))
    return Room("exact_stall", {"task": "fix it", "turns": turns})


def progress(rng: random.Random, rounds: int) -> Room:
    topics = rng.sample(TOPICS, rounds)
    turns = []
    for i in range(rounds):
        fixed = f"fixed: {topics[i - 1]}" if i else "first version"
        turns.append(_turn("owner", f"DONE\n{fixed}", f"tree-{i}"))
        if i == rounds - 1:
            turns.append(_turn("reviewer", "APPROVED\nall good now", f"tree-{i}"))
        else:
            turns.append(
                _turn(
                    "reviewer", f"CHANGES_REQUESTED\n- [x] earlier item\n- {topics[i]}", f"tree-{i}"
                )
            )
    return Room("progress", {"task": "build the exporter", "turns": turns})


def held_out(seed: int = 21, each: int = 10) -> list[Room]:
    """`each` rooms of every kind: stalls of 5 to 8 rounds, progress over 4 to 9 rounds."""
    rng = random.Random(seed)
    rooms: list[Room] = []
    for _ in range(each):
        rooms.append(reworded_stall(rng, rng.randint(5, 8)))
        rooms.append(exact_stall(rng, rng.randint(3, 6)))
        rooms.append(progress(rng, rng.randint(4, 9)))
    return rooms


def oracle_judgments(room: Room, *, noise: float, rng: random.Random) -> dict[int, str]:
    """A cheap judge's answers for every review of `room`: "no" in a stall, "yes" in progress,
    each flipped with probability `noise` (a judge is not an oracle)."""
    out: dict[int, str] = {}
    for index, turn in enumerate(room.transcript["turns"]):
        if turn["role"] != "reviewer":
            continue
        progressing = not room.stall
        if rng.random() < noise:
            progressing = not progressing
        out[index] = '{"progress": "%s"}' % ("yes" if progressing else "no")
    return out
