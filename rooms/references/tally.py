"""Each reference's own verdict, read as an arbiter's ruling is read (rooms/judge/verdicts.py),
and their count beside the ruling."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rooms.judge.verdicts import parse_ruling

UNANIMOUS_MIN = 2  # one answer agreeing with itself is not a panel


def read_verdict(text: str) -> str | None:
    """The verdict a reference gave, None when it gave none that can be read (in doubt, too)."""
    ruling = parse_ruling(text, None)
    return ruling.verdict if ruling.readable else None


@dataclass(frozen=True)
class Tally:
    counts: tuple[tuple[str, int], ...] = ()  # verdict → answers, most first
    unread: int = 0  # answers without a readable verdict

    @property
    def votes(self) -> int:
        return sum(n for _, n in self.counts)

    @property
    def majority(self) -> str | None:
        """The verdict of more than half of all answers, if any."""
        if self.counts and self.counts[0][1] * 2 > self.votes + self.unread:
            return self.counts[0][0]
        return None

    @property
    def unanimous(self) -> str | None:
        """The verdict every answer gave, when at least UNANIMOUS_MIN answered."""
        if len(self.counts) == 1 and not self.unread and self.votes >= UNANIMOUS_MIN:
            return self.counts[0][0]
        return None

    def describe(self) -> str:
        if not self.counts and not self.unread:
            return "no answers"
        parts = [f"{verdict} {n}" for verdict, n in self.counts]
        if self.unread:
            parts.append(f"unreadable {self.unread}")
        return ", ".join(parts)

    def to_json(self) -> dict[str, object]:
        return {
            "counts": dict(self.counts),
            "unread": self.unread,
            "majority": self.majority,
            "unanimous": self.unanimous,
        }


def tally(verdicts: Sequence[str | None]) -> Tally:
    counted = Counter(v for v in verdicts if v is not None)
    ranked = sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))
    return Tally(tuple(ranked), sum(1 for v in verdicts if v is None))
