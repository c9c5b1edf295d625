"""At most `max_talk_rounds` rounds of talk without tests: after the test design, resolve runs
the tests when there is a discriminating one, talks once more (the positions clarify what the
test designer asked) while rounds are left, and otherwise hands the question to the people."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from rooms.resolve.adjudicate import discriminates
from rooms.resolve.limits import ResolveLimits
from rooms.resolve.outputs import DesignedTest, PositionOut

Next = Literal["run", "talk", "escalate"]


def after_design(
    positions: Sequence[PositionOut],
    tests: Sequence[DesignedTest],
    talk_rounds: int,
    limits: ResolveLimits,
) -> Next:
    """`talk_rounds`: rounds of talk so far (the first statement of positions is one)."""
    if any(discriminates(t, positions) is None for t in tests):
        return "run"
    return "talk" if talk_rounds < limits.max_talk_rounds else "escalate"


def select_tests(
    positions: Sequence[PositionOut], tests: Sequence[DesignedTest], limits: ResolveLimits
) -> tuple[list[DesignedTest], list[DesignedTest]]:
    """(the tests to run, those beyond `max_tests`): discriminating tests first, in order, so a
    designer cannot crowd out the deciding tests with filler."""
    deciding = [t for t in tests if discriminates(t, positions) is None]
    rest = [t for t in tests if discriminates(t, positions) is not None]
    ordered = deciding + rest
    return ordered[: limits.max_tests], ordered[limits.max_tests :]


def position_problems(positions: Sequence[PositionOut], limits: ResolveLimits) -> list[str]:
    problems = []
    n = len(positions)
    if not limits.min_positions <= n <= limits.max_positions:
        problems.append(
            f"{n} positions; resolve needs {limits.min_positions}–{limits.max_positions}"
        )
    ids = [p.id for p in positions]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        problems.append("repeated position ids: " + ", ".join(repeated))
    return problems
