"""Owner and reviewer objects as their runners send them under `OWNER_SCHEMA` /
`REVIEWER_SCHEMA` (rooms/judge/turn_objects.py), for scripted runners: every field the schema
has, empty unless given, as strict structured output sends them.

    review("CHANGES_REQUESTED", findings=[finding("", "a.py:3", "off by one")])
    work("DONE", addressed=["F1"])
"""

from __future__ import annotations

from typing import Any

from rooms.judge.turn_objects import OWNER_SCHEMA, REVIEWER_SCHEMA
from tests.fakes.runner import Reply, say


def _empty(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        name: [] if spec["type"] == "array" else "" for name, spec in schema["properties"].items()
    }


def finding(id: str, where: str, text: str, status: str = "open") -> dict[str, str]:
    return {"id": id, "status": status, "where": where, "text": text}


def review_object(verdict: str, **fields: Any) -> dict[str, Any]:
    return {**_empty(REVIEWER_SCHEMA), "verdict": verdict, "prose": f"review: {verdict}", **fields}


def work_object(status: str, **fields: Any) -> dict[str, Any]:
    return {**_empty(OWNER_SCHEMA), "status": status, "prose": f"work: {status}", **fields}


def review(verdict: str, text: str = "", **fields: Any) -> Reply:
    """A reviewer's reply with its object; `text`: what the runner printed beside it (by
    default nothing a text reader could take for a marker)."""
    return say(text or "(structured output)", structured=review_object(verdict, **fields))


def work(status: str, text: str = "", files: dict[str, str] | None = None, **fields: Any) -> Reply:
    """An owner's reply with its object; `files`: what it writes in the workspace."""
    extra = {"files": files} if files is not None else {}
    return say(text or "(structured output)", structured=work_object(status, **fields), **extra)
