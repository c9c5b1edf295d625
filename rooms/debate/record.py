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
    """The record in markdown: the head (decision, preferred side), then the sections of
    `SECTIONS` in order (the referee's report gives the last six), then the gaps if any; one
    blank line between sections."""
    sections = [
        _head(r),
        _frame(r.frame),
        _briefs(r.advocate, r.challenger),
        _cross_examination(r, limits),
        _scores(r, limits),
        *_report(r.report),
    ]
    if r.gaps:
        sections.append(
            _section("Gaps", ["What the briefs or the report did not answer:", ""], _items(r.gaps))
        )
    lines: list[str] = []
    for section in sections:
        lines += [""] + section if lines else section
    return "\n".join([*lines, ""])


def _section(title: str, *parts: list[str]) -> list[str]:
    return [f"## {title}", ""] + [line for part in parts for line in part]


def _head(r: DebateRecord) -> list[str]:
    out = [f"# Debate: {_line(r.decision)}", ""]
    out.append(f"**Preferred:** the {r.outcome.preferred} — {r.outcome.reason}.")
    if r.report.irreconcilable:
        out += [
            "",
            "**Irreconcilable:** the referee found the sides cannot be reconciled; the "
            "people in the room decide, with both positions preserved.",
        ]
    return out


def _frame(check: FrameCheck) -> list[str]:
    """The frame as agreed (or as each side stated it), and each side's objection."""
    out = [
        f"- **{FRAME_LABELS[n]}:** {_line(getattr(check.frame, n)) or '—'}" for n in FRAME_FIELDS
    ]
    if not check.agreed:
        out += ["", "**The sides disagree on the frame** (a finding in itself):", ""]
        out += ["| Field | Advocate | Challenger |", "| --- | --- | --- |"]
        out += [
            f"| {FRAME_LABELS[d.field]} | {_cell(d.advocate)} | {_cell(d.challenger)} |"
            for d in check.differences
        ]
    out += [f"- The {side} objected: {_line(objection)}" for side, objection in check.objections]
    return _section("Frame", out)


def _briefs(a: AdvocateBrief, c: ChallengerBrief) -> list[str]:
    advocate = _fields(
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
    challenger = _fields(
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
    return _section(
        "Opening briefs", ["### Advocate", ""], advocate, ["", "### Challenger", ""], challenger
    )


def _cross_examination(r: DebateRecord, limits: DebateLimits) -> list[str]:
    """Each side's questions in turn, with the answers; a question beyond the limit is only
    counted."""
    out: list[str] = []
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
    return _section("Cross-examination", out[:-1])  # the blank after the last is the next's


def _scores(r: DebateRecord, limits: DebateLimits) -> list[str]:
    """The referee's scores per criterion and each side's weighted total."""
    out = ["| Criterion | Weight | Advocate | Challenger |", "| --- | --- | --- | --- |"]
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
    return _section("Scores", out)


def _report(rep: RefereeReport) -> list[list[str]]:
    """The referee's report, one section each: agreement, tensions resolved and not, the
    guardrails, the confidence and the options."""
    resolved = [
        f"{t.tension} — settled by: {t.evidence or '—'}; now shared: {t.shared_position or '—'}"
        for t in rep.resolved
    ]
    unresolved = [
        f"{t.tension} — would be settled by: {t.data_needed or '—'}"
        f" (cost: {t.cost_to_obtain or '—'})"
        for t in rep.unresolved
    ]
    guardrails = [
        f"{g.name}: {g.status}" + (f" — {g.note}" if g.note else "") for g in rep.guardrails
    ]
    confidence = rep.confidence
    options = [f"{o.option} — when: {o.conditions or '(no conditions given)'}" for o in rep.options]
    return [
        _section("Points of Agreement", _items(rep.agreement)),
        _section("Resolved Tensions", _items(resolved)),
        _section("Unresolved Tensions", _items(unresolved)),
        _section("Guardrail Status", _items(guardrails)),
        _section(
            "Confidence",
            [f"{confidence.level.title()} — {_line(confidence.reason) or '(no reason given)'}"],
        ),
        _section("Option Set", _items(options)),
    ]


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
