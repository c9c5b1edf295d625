"""Scripted arena actors: the objects the moderator, experts and synthesizer return."""

from __future__ import annotations

from typing import Any

SLUGS = ("fleet-operator", "security-auditor", "product-owner", "skeptic")


def panel(
    slugs: tuple[str, ...] = SLUGS, researchers: int = 3, topic: str = "Queue or not?"
) -> dict[str, Any]:
    return {
        "topic": topic,
        "code_question": True,
        "experts": [
            {
                "slug": slug,
                "name": slug.replace("-", " ").title(),
                "angle": f"the {slug} view",
                "persona": f"A seasoned {slug}.",
                "expected_position": "",
                "devil_advocate": slug == slugs[-1],
            }
            for slug in slugs
        ],
        "researchers": [{"focus": f"focus {i}"} for i in range(1, researchers + 1)],
    }


def docs(
    r: float = 0.9, cl: float = 1.0, title: str = "Queue docs", bearing: bool = True
) -> dict[str, Any]:
    return {"title": title, "source": title.lower(), "r": r, "cl": cl, "load_bearing": bearing}


def msg(
    kind: str = "position", stance: str = "Add the queue", to: tuple[str, ...] = (), **fields: Any
) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kind": kind,
        "to": list(to),
        "stance": stance,
        "shifted": False,
        "text": f"{kind}: {stance}",
        "evidence": [docs()],
        "challenges": [],
        "veto": "none",
        "veto_reason": "",
    }
    base.update(fields)
    return base


def final(stance: str = "Add the queue", **fields: Any) -> dict[str, Any]:
    return msg("final", stance, **fields)


def narrative(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "status": "partial",
        "verdict": "Add the queue behind a flag.",
        "recommendation": "Add it, measure, keep the flag for a quarter.",
        "progression": ["the skeptic challenged the docs' CL"],
        "remaining_disagreements": [],
        "trade_offs": ["one more moving part"],
        "contested": [],
    }
    base.update(fields)
    return base
