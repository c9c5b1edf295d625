"""Scripted debate actors: the structured objects a debate's runs return, for machine and
engine tests."""

from __future__ import annotations

from typing import Any

from rooms.debate.limits import CRITERIA


def frame(accept: bool = True, **fields: str) -> dict[str, Any]:
    base = dict.fromkeys(("decision", "shared_data", "horizon", "reversibility", "authority"), "")
    base.update(fields)
    return {"accept": accept, "frame": base, "objection": "" if accept else "not our frame"}


def advocate_brief() -> dict[str, Any]:
    return {
        "position": "Move billing to the queue now",
        "thesis": "Throughput is the bottleneck",
        "base_case": "+20% throughput in a quarter",
        "upside_drivers": ["batching"],
        "downside": "a week of degraded latency",
        "optionality": "sharding later",
        "execution_plan": "flag, shadow traffic, cut over",
        "kill_criteria": ["p99 above 300ms for a day"],
    }


def challenger_brief() -> dict[str, Any]:
    return {
        "optimistic_assumptions": ["load stays flat", "no schema change", "team of three"],
        "discipline_lens": "stressed at 2x load the queue saturates",
        "hidden_costs": ["on-call training"],
        "guardrails": [{"name": "p99 latency", "status": "margin", "note": "20ms left"}],
        "opportunity_cost": "the search rewrite",
        "reversibility_cost": "two days to switch back",
        "catastrophic_conditions": ["message loss on failover"],
    }


def questions(*texts: str) -> dict[str, Any]:
    return {"questions": [{"kind": "assumption", "text": t} for t in texts]}


def answers(*texts: str) -> dict[str, Any]:
    return {"answers": [{"number": i, "text": t} for i, t in enumerate(texts, start=1)]}


def referee(advocate: float = 6.0, challenger: float = 6.0, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "advocate_scores": dict.fromkeys(CRITERIA, advocate),
        "challenger_scores": dict.fromkeys(CRITERIA, challenger),
        "agreement": ["the queue is faster at today's load"],
        "resolved": [],
        "unresolved": [
            {"tension": "failover loss", "data_needed": "a chaos test", "cost_to_obtain": "2 days"}
        ],
        "guardrails": [{"name": "p99 latency", "status": "margin", "note": "20ms"}],
        "confidence": {"level": "medium", "reason": "no failover test yet"},
        "options": [
            {"option": "Move behind a flag", "conditions": "if the chaos test passes"},
            {"option": "Wait a quarter", "conditions": "if it loses messages"},
        ],
        "irreconcilable": False,
    }
    base.update(fields)
    return base
