"""Adjudication by tests: a winner needs a majority of the discriminating tests that ran.

- A test is discriminating when it predicts an outcome for every position and not the same
  outcome for all of them; other tests are excluded, and say why.
- A test that could not run (ERROR, or no result) is excluded. Results are the engine's own
  observations of the commands it ran (rooms/resolve/checks.py), never a participant's report.
- Each test that ran supports the positions that predicted its outcome. The winner is the one
  position supported by more than half of the tests that counted, and by more than any other.
- No winner — nothing discriminated, nothing ran, or a split — means the people decide, with
  every position and what it stands for preserved as dissent. Evidence picks the winner; there
  is no averaging into a compromise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rooms.resolve.checks import Observation
from rooms.resolve.outputs import DesignedTest, PositionOut


@dataclass(frozen=True)
class Excluded:
    test: str
    why: str


@dataclass(frozen=True)
class Cell:
    """One row of the results matrix: a test, what it did, and what each position predicted."""

    test: DesignedTest
    observed: str  # PASS, FAIL, ERROR, or NOT RUN
    counted: bool
    supports: tuple[str, ...]  # positions whose prediction matched
    seen: Observation | None = None  # what the engine saw it do (None: not run)


@dataclass(frozen=True)
class Decision:
    winner: str | None
    tally: dict[str, int]  # position → tests it won
    counted: int  # discriminating tests that ran
    matrix: tuple[Cell, ...]
    excluded: tuple[Excluded, ...]
    rationale: str
    dissent: tuple[tuple[str, str], ...]  # (position, what it stands for), every losing position
    question: str = ""  # for the people, when there is no winner

    @property
    def needs_people(self) -> bool:
        return self.winner is None


def discriminates(test: DesignedTest, positions: Sequence[PositionOut]) -> str | None:
    """None when `test` tells the positions apart; else why it does not."""
    ids = [p.id for p in positions]
    predicted: dict[str, str] = {}
    for prediction in test.predictions:
        if (
            prediction.position in predicted
            and predicted[prediction.position] != prediction.outcome
        ):
            return f"it predicts both outcomes for position {prediction.position}"
        predicted[prediction.position] = prediction.outcome
    missing = [i for i in ids if i not in predicted]
    if missing:
        return "no prediction for position " + ", ".join(missing)
    if len({predicted[i] for i in ids}) < 2:
        return f"every position predicts {predicted[ids[0]]}"
    return None


def adjudicate(
    positions: Sequence[PositionOut],
    tests: Sequence[DesignedTest],
    results: Sequence[Observation],
    not_run: Sequence[DesignedTest] = (),
) -> Decision:
    """`not_run`: tests designed beyond the limit; they are shown as excluded, never counted."""
    ids = [p.id for p in positions]
    observed: dict[str, Observation] = {}
    for result in results:
        observed.setdefault(result.test, result)  # a repeated id is excluded below anyway
    excluded: list[Excluded] = []
    matrix: list[Cell] = []
    tally = dict.fromkeys(ids, 0)
    seen: set[str] = set()
    for test in tests:
        repeated = test.id in seen
        seen_run = None if repeated else observed.get(test.id)
        outcome = seen_run.outcome if seen_run else "NOT RUN"
        why = "its id repeats another test's" if repeated else discriminates(test, positions)
        seen.add(test.id)
        if why is None and outcome not in ("PASS", "FAIL"):
            why = "it could not run" if outcome == "ERROR" else "no result was reported"
        if why is not None:
            excluded.append(Excluded(test.id, why))
            matrix.append(Cell(test, outcome, False, (), seen_run))
            continue
        supports = tuple(
            p.position for p in test.predictions if p.outcome == outcome and p.position in tally
        )
        supports = tuple(dict.fromkeys(supports))
        for position in supports:
            tally[position] += 1
        matrix.append(Cell(test, outcome, True, supports, seen_run))
    for test in not_run:
        excluded.append(Excluded(test.id, "beyond the limit of tests run"))
        matrix.append(Cell(test, "NOT RUN", False, ()))
    counted = sum(1 for cell in matrix if cell.counted)
    winner, rationale = _winner(tally, counted, tests, excluded)
    losing = [p for p in positions if p.id != winner]
    dissent = tuple((p.id, p.rationale or p.approach) for p in losing)
    question = "" if winner else _question(positions)
    return Decision(
        winner, tally, counted, tuple(matrix), tuple(excluded), rationale, dissent, question
    )


def _winner(
    tally: dict[str, int], counted: int, tests: Sequence[DesignedTest], excluded: Sequence[Excluded]
) -> tuple[str | None, str]:
    if not tests:
        return None, "no test was designed"
    if counted == 0:
        if all(e.why in ("it could not run", "no result was reported") for e in excluded):
            return None, "no test could run"
        return None, "the tests do not discriminate between the positions"
    best = max(tally.values())
    leaders = [p for p, wins in tally.items() if wins == best]
    score = ", ".join(f"{p} {w}" for p, w in tally.items())
    if len(leaders) == 1 and best * 2 > counted:
        return leaders[0], f"{leaders[0]} wins {best} of {counted} discriminating tests ({score})"
    return None, f"no position wins a majority of the {counted} discriminating tests ({score})"


def _question(positions: Sequence[PositionOut]) -> str:
    stands = "; ".join(f"{p.id}: {p.approach}" for p in positions)
    return f"The tests did not settle it. Which position should the work follow? ({stands})"
