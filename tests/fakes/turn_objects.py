"""Owner and reviewer objects as their runners send them under `OWNER_SCHEMA` /
`REVIEWER_SCHEMA` (rooms/judge/turn_objects.py), for scripted runners: every field the schema
has, empty unless given, as strict structured output sends them.

    review("CHANGES_REQUESTED", findings=[finding("", "a.py:3", "off by one")])
    work("DONE", addressed=["F1"])
"""

from __future__ import annotations

from typing import Any

from rooms.judge.turn_objects import OWNER_SCHEMA, REVIEWER_SCHEMA
from tests.fakes.messages_api import Reply as MessagesReply
from tests.fakes.messages_api import structured as structured_reply
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


def marked_object(role: str, text: str) -> dict[str, Any]:
    """The object a model that writes `text` (a marker line, then prose) sends under its role's
    schema: the marker as its status or verdict, the whole text as its prose (so the thread
    shows what it showed before the turns were structured)."""
    marker = text.split(maxsplit=1)[0].rstrip(":.") if text.strip() else ""
    return (work_object if role == "owner" else review_object)(marker, prose=text)


def owner_says(text: str) -> MessagesReply:
    """A fake Messages API's answer to an owner's schema request (Claude Code's
    `StructuredOutput` tool call), from the owner's text."""
    return structured_reply(marked_object("owner", text))


def reviewer_says(text: str) -> MessagesReply:
    return structured_reply(marked_object("reviewer", text))
