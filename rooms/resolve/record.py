"""Resolve's decision record: the positions, the tests with each position's prediction, the
results matrix (with what the engine saw: exit status and the end of each test's output), what
was excluded and why, and the decision or the preserved dissent; and the results as posted in
the room. A test's output is shown only through `fenced` (rooms/resolve/checks.py)."""

from __future__ import annotations

from collections.abc import Sequence

from rooms.resolve.adjudicate import Cell, Decision
from rooms.resolve.checks import SHOWN_CHARS, SHOWN_LINES, fenced
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
            "| Test | "
            + " | ".join(f"{i} predicts" for i in ids)
            + " | Observed | Exit | Counted |"
        )
        out.append("| --- " * (len(ids) + 4) + "|")
        for cell in decision.matrix:
            predicted = {p.position: p.outcome for p in cell.test.predictions}
            row = " | ".join(
                predicted.get(i, "—") + (" ✓" if i in cell.supports else "") for i in ids
            )
            counted = "yes" if cell.counted else "no"
            out.append(f"| {cell.test.id} | {row} | {cell.observed} | {_exit(cell)} | {counted} |")
        for cell in decision.matrix:
            if cell.seen is not None:
                out += ["", f"Output of {cell.test.id} ({cell.seen.detail}), its end:", ""]
                out.append(fenced(cell.seen.output_tail))
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


def results_post(positions: Sequence[PositionOut], decision: Decision) -> str:
    """The results as the room sees them: per test what it did (run by Tribunal, not reported
    by anyone), what each position predicted, and the last lines of its output."""
    out = ["🧪 **Results** (each test run by Tribunal in the workspace):"]
    for cell in decision.matrix:
        predicted = {p.position: p.outcome for p in cell.test.predictions}
        said = ", ".join(
            f"{p.id} said {predicted.get(p.id, '—')}" + (" ✓" if p.id in cell.supports else "")
            for p in positions
        )
        how = f" ({cell.seen.detail})" if cell.seen is not None else ""
        counted = "" if cell.counted else " · not counted"
        out.append(f"- **{cell.test.id}** {_line(cell.test.name)}: **{cell.observed}**{how}")
        out.append(f"  {said}{counted}")
        if cell.seen is not None:
            out.append(fenced(cell.seen.output_tail, lines=SHOWN_LINES, chars=SHOWN_CHARS))
    return "\n".join(out)


def _exit(cell: Cell) -> str:
    if cell.seen is None:
        return "—"
    if cell.seen.exit_status is not None:
        return str(cell.seen.exit_status)
    return cell.seen.detail


def _line(text: str) -> str:
    return " ".join(text.split())


def _code(text: str) -> str:
    return _line(text).replace("`", "'")
