"""Resolve's limits, defined once: `bot` exposes every field as a setting of the group
(`[groups.<name>.resolve]`), with these defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from runners.protocol import MAX_CHECK_TIMEOUT_S

MIN_TEST_S = 1.0  # a test gets at least this long, or is not run
MAX_TOTAL_S = 24 * 3600.0


# The name resolve registers under (rooms/__init__.py): its tasks record it, and a group's
# policy keeps these limits under it (rooms.base.model.GroupPolicy.protocol_limits).
NAME: Final = "resolve"


class LimitsError(ValueError):
    """Limits that cannot be used; the message names the fields."""


@dataclass(frozen=True)
class ResolveLimits:
    max_talk_rounds: int = 2  # rounds of talk without a discriminating test, then the people decide
    min_positions: int = 2
    max_positions: int = 4
    max_tests: int = 6  # discriminating tests run; more are reported, not run
    # The tests are run by the engine (runners/command.py): each is killed after
    # `test_timeout_s`, and all of them together get at most `tests_total_s`.
    test_timeout_s: float = 120.0
    tests_total_s: float = 600.0
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
        if not MIN_TEST_S <= self.test_timeout_s <= MAX_CHECK_TIMEOUT_S:
            most = MAX_CHECK_TIMEOUT_S
            problems.append(f"test_timeout_s must be at least {MIN_TEST_S:g} and at most {most:g}")
        if not self.test_timeout_s <= self.tests_total_s <= MAX_TOTAL_S:
            problems.append(
                f"tests_total_s must be at least test_timeout_s and at most {MAX_TOTAL_S:g}"
            )
        if problems:
            raise LimitsError("; ".join(problems))
