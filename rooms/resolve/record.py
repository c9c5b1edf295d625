"""Resolve's decision record: the positions, the tests with each position's prediction, the
results matrix, what was excluded and why, and the decision or the preserved dissent."""

from __future__ import annotations

from collections.abc import Sequence

from rooms.resolve.adjudicate import Decision
from rooms.resolve.outputs import PositionOut

SECTIONS = ("Positions", "Discriminating tests", "Results matrix", "Decision", "Dissent")


def render(question: str, positions: Sequence[PositionOut], decision: Decision) -> str:
    ids = [p.id for p in positions]
    out = [f"# Resolve: {_line(question)}", ""]
    out += ["## Positions", ""]
    out += [
        f"- **{p.id}:** {_line(p.approach)}" + (f" — {_line(p.rationale)}" if p.rationale else "")
        for p in positions
    ]
    out += ["", "## Discriminating tests", ""]
    if not decision.matrix:
        out.append("No test was designed.")
    for cell in decision.matrix:
        t = cell.test
        out.append(f"- **{t.id}** {_line(t.name)}: {_line(t.claim) or '—'} (`{_code(t.command)}`)")
    out += ["", "## Results matrix", ""]
    if decision.matrix:
        out.append(
            "| Test | " + " | ".join(f"{i} predicts" for i in ids) + " | Observed | Counted |"
        )
        out.append("| --- " * (len(ids) + 3) + "|")
        for cell in decision.matrix:
            predicted = {p.position: p.outcome for p in cell.test.predictions}
            row = " | ".join(
                predicted.get(i, "—") + (" ✓" if i in cell.supports else "") for i in ids
            )
            out.append(
                f"| {cell.test.id} | {row} | {cell.observed} | {'yes' if cell.counted else 'no'} |"
            )
    if decision.excluded:
        out += ["", "Excluded:", ""] + [f"- {e.test}: {e.why}" for e in decision.excluded]
    out += ["", "## Decision", ""]
    if decision.winner:
        out.append(f"**Winner: {decision.winner}** — {decision.rationale}.")
    else:
        out.append(f"**No winner** — {decision.rationale}. The people in the room decide.")
        out += ["", decision.question]
    out += ["", "## Dissent", ""]
    out += [f"- **{p}** stands for: {_line(why)}" for p, why in decision.dissent] or ["None."]
    out.append("")
    return "\n".join(out)


def _line(text: str) -> str:
    return " ".join(text.split())


def _code(text: str) -> str:
    return _line(text).replace("`", "'")
