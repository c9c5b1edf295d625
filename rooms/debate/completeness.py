"""The referee gates on completeness: both briefs answer their template, and the report has
every section the adjudication must check (premature termination is the failure mode)."""

from __future__ import annotations

from collections.abc import Iterable

from rooms.debate.outputs import AdvocateBrief, ChallengerBrief, RefereeReport

ASSUMPTIONS_MIN, ASSUMPTIONS_MAX = 3, 5
MIN_OPTIONS = 2  # an option set, never a binary yes/no


def advocate_gaps(brief: AdvocateBrief) -> list[str]:
    labels = {
        "position": "position",
        "thesis": "strategic thesis",
        "base_case": "base case",
        "upside_drivers": "upside drivers",
        "downside": "downside acknowledgment",
        "optionality": "optionality preserved",
        "execution_plan": "execution plan",
        "kill_criteria": "kill criteria",
    }
    return [label for name, label in labels.items() if not _given(getattr(brief, name))]


def challenger_gaps(brief: ChallengerBrief) -> list[str]:
    labels = {
        "discipline_lens": "what the discipline lens shows",
        "hidden_costs": "hidden costs",
        "guardrails": "guardrail check",
        "opportunity_cost": "opportunity cost",
        "reversibility_cost": "reversibility cost",
        "catastrophic_conditions": "catastrophic-failure conditions",
    }
    gaps = []
    n = len([a for a in brief.optimistic_assumptions if a.strip()])
    if not ASSUMPTIONS_MIN <= n <= ASSUMPTIONS_MAX:
        gaps.append(
            f"where the base case is too optimistic ({n} assumptions; "
            f"{ASSUMPTIONS_MIN}–{ASSUMPTIONS_MAX} wanted)"
        )
    gaps += [label for name, label in labels.items() if not _given(getattr(brief, name))]
    return gaps


def report_gaps(report: RefereeReport, guardrails: Iterable[str] = ()) -> list[str]:
    """What the referee's report lacks. `guardrails`: the names the challenger checked, each of
    which needs a status in the report."""
    gaps = []
    if not (report.agreement or report.resolved or report.unresolved):
        gaps.append("points of agreement or tensions (resolved or unresolved)")
    if not report.confidence.reason:
        gaps.append("the reason for the confidence")
    options = [o for o in report.options if o.conditions]
    if len(options) < MIN_OPTIONS:
        gaps.append(f"an option set: at least {MIN_OPTIONS} options, each with its conditions")
    named = {" ".join(g.name.lower().split()) for g in report.guardrails}
    missing = [g for g in guardrails if " ".join(g.lower().split()) not in named]
    if missing:
        gaps.append("the status of guardrails: " + ", ".join(missing))
    return gaps


def _given(value: object) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list):
        return bool(value)
    return value is not None
