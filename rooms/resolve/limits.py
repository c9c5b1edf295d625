"""Resolve's limits, defined once: `bot` exposes every field as a setting of the group
(`[groups.<name>.resolve]`), with these defaults."""

from __future__ import annotations

from dataclasses import dataclass


class LimitsError(ValueError):
    """Limits that cannot be used; the message names the fields."""


@dataclass(frozen=True)
class ResolveLimits:
    max_talk_rounds: int = 2  # rounds of talk without a discriminating test, then the people decide
    min_positions: int = 2
    max_positions: int = 4
    max_tests: int = 6  # discriminating tests run; more are reported, not run
    # How often in one pair's task the arbiter may ask for tests before ruling (0: never);
    # at most once per arbitration either way (rooms/pair/resolving.py).
    from_arbiter: int = 2

    def __post_init__(self) -> None:
        problems = []
        if self.max_talk_rounds < 1:
            problems.append("max_talk_rounds must be at least 1")
        if not 2 <= self.min_positions <= self.max_positions:
            problems.append("min_positions must be at least 2 and at most max_positions")
        if self.from_arbiter < 0:
            problems.append("from_arbiter must be 0 or more")
        if self.max_tests < 1:
            problems.append("max_tests must be at least 1")
        if problems:
            raise LimitsError("; ".join(problems))
