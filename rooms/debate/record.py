"""The debate's decision record: frame, briefs, cross-examination, the referee's scores and
report, and the preferred side (a tie shown as going to the cautious side)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rooms.debate.cross import CrossRound
from rooms.debate.frame import FRAME_FIELDS, FRAME_LABELS, FrameCheck
from rooms.debate.limits import CRITERIA, CRITERION_LABELS, DebateLimits
from rooms.debate.outputs import AdvocateBrief, ChallengerBrief, RefereeReport
from rooms.debate.rubric import Outcome

SECTIONS = (
    "Frame",
    "Opening briefs",
    "Cross-examination",
    "Scores",
    "Points of Agreement",
    "Resolved Tensions",
    "Unresolved Tensions",
    "Guardrail Status",
    "Confidence",
    "Option Set",
)


@dataclass(frozen=True)
class DebateRecord:
    decision: str
    frame: FrameCheck
    advocate: AdvocateBrief
    challenger: ChallengerBrief
    to_challenger: CrossRound  # the advocate's questions, answered by the challenger
    to_advocate: CrossRound
    report: RefereeReport
    outcome: Outcome
    gaps: tuple[str, ...] = ()  # what the briefs or the report lacked


def render(r: DebateRecord, limits: DebateLimits) -> str:
    out = [f"# Debate: {_line(r.decision)}", ""]
    out += [f"**Preferred:** the {r.outcome.preferred} — {r.outcome.reason}.", ""]
    if r.report.irreconcilable:
        out += [
            "**Irreconcilable:** the referee found the sides cannot be reconciled; the "
            "people in the room decide, with both positions preserved.",
            "",
        ]
    out += ["## Frame", ""]
    out += [
        f"- **{FRAME_LABELS[n]}:** {_line(getattr(r.frame.frame, n)) or '—'}" for n in FRAME_FIELDS
    ]
    if not r.frame.agreed:
        out += ["", "**The sides disagree on the frame** (a finding in itself):", ""]
        out += ["| Field | Advocate | Challenger |", "| --- | --- | --- |"]
        out += [
            f"| {FRAME_LABELS[d.field]} | {_cell(d.advocate)} | {_cell(d.challenger)} |"
            for d in r.frame.differences
        ]
    for side, objection in r.frame.objections:
        out.append(f"- The {side} objected: {_line(objection)}")
    out += ["", "## Opening briefs", "", "### Advocate", ""]
    a = r.advocate
    out += _fields(
        [
            ("Position", a.position),
            ("Strategic thesis", a.thesis),
            ("Base case", a.base_case),
            ("Upside drivers", a.upside_drivers),
            ("Downside", a.downside),
            ("Optionality preserved", a.optionality),
            ("Execution plan", a.execution_plan),
            ("Kill criteria", a.kill_criteria),
        ]
    )
    c = r.challenger
    out += ["", "### Challenger", ""]
    out += _fields(
        [
            ("Where the base case is too optimistic", c.optimistic_assumptions),
            ("What the discipline lens shows", c.discipline_lens),
            ("Hidden costs", c.hidden_costs),
            ("Guardrail check", [f"{g.name}: {g.status} {g.note}".strip() for g in c.guardrails]),
            ("Opportunity cost", c.opportunity_cost),
            ("Reversibility cost", c.reversibility_cost),
            ("Catastrophic-failure conditions", c.catastrophic_conditions),
        ]
    )
    out += ["", "## Cross-examination", ""]
    for title, round_ in (
        ("The advocate asks", r.to_challenger),
        ("The challenger asks", r.to_advocate),
    ):
        out += [f"### {title}", ""]
        for e in round_.exchanges:
            out.append(f"{e.number}. ({e.question.kind}) {_line(e.question.text)}")
            out.append(f"   - Answer: {_line(e.answer) if e.answer else '(not answered)'}")
        if not round_.exchanges:
            out.append("No questions.")
        if round_.deferred:
            out.append(
                f"Deferred (beyond {limits.questions_per_side} questions): {len(round_.deferred)}"
            )
        out.append("")
    out += [
        "## Scores",
        "",
        "| Criterion | Weight | Advocate | Challenger |",
        "| --- | --- | --- | --- |",
    ]
    adv, ch = r.report.advocate_scores, r.report.challenger_scores
    for name in CRITERIA:
        out.append(
            f"| {CRITERION_LABELS[name]} | {limits.weights[name]} | {getattr(adv, name):g} |"
            f" {getattr(ch, name):g} |"
        )
    out.append(
        f"| **Weighted total (of 100)** | | **{r.outcome.totals['advocate']:.1f}** |"
        f" **{r.outcome.totals['challenger']:.1f}** |"
    )
    rep = r.report
    out += ["", "## Points of Agreement", ""] + _items(rep.agreement)
    out += ["", "## Resolved Tensions", ""] + _items(
        [
            f"{t.tension} — settled by: {t.evidence or '—'}; now shared: {t.shared_position or '—'}"
            for t in rep.resolved
        ]
    )
    out += ["", "## Unresolved Tensions", ""] + _items(
        [
            f"{t.tension} — would be settled by: {t.data_needed or '—'}"
            f" (cost: {t.cost_to_obtain or '—'})"
            for t in rep.unresolved
        ]
    )
    out += ["", "## Guardrail Status", ""] + _items(
        [f"{g.name}: {g.status}" + (f" — {g.note}" if g.note else "") for g in rep.guardrails]
    )
    out += [
        "",
        "## Confidence",
        "",
        f"{rep.confidence.level.title()} — {_line(rep.confidence.reason) or '(no reason given)'}",
    ]
    out += ["", "## Option Set", ""] + _items(
        [f"{o.option} — when: {o.conditions or '(no conditions given)'}" for o in rep.options]
    )
    if r.gaps:
        out += ["", "## Gaps", "", "What the briefs or the report did not answer:", ""] + _items(
            list(r.gaps)
        )
    out.append("")
    return "\n".join(out)


def _fields(pairs: Sequence[tuple[str, str | list[str]]]) -> list[str]:
    lines = []
    for label, value in pairs:
        if isinstance(value, list):
            lines.append(f"- **{label}:**" + ("" if value else " —"))
            lines += [f"  - {_line(v)}" for v in value]
        else:
            lines.append(f"- **{label}:** {_line(value) or '—'}")
    return lines


def _items(items: Sequence[str]) -> list[str]:
    return [f"- {_line(i)}" for i in items] if items else ["None."]


def _line(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    return _line(text).replace("|", "\\|")
