"""A structured ruling as an arbiter sends it under `RULING_SCHEMA`, for scripted runners and
fake model APIs: every field the schema has, empty unless given. Strict structured output sends
them all, and the real Claude Code refuses an object with a field the schema does not allow, so
the scripts take the fields from the schema rather than listing them again.

    ruling_object("REVISE", conditions=["add a test"])   # the object
    ruling_reply("ESCALATE", question="…?", options=[…])  # a scripted runner's reply with it
"""

from __future__ import annotations

from typing import Any

from rooms.judge.verdicts import RULING_SCHEMA
from tests.fakes.runner import Reply, say


def ruling_object(verdict: str, **fields: Any) -> dict[str, Any]:
    empty = {
        name: [] if spec["type"] == "array" else ""
        for name, spec in RULING_SCHEMA["properties"].items()
    }
    return {**empty, "verdict": verdict, "reasons": f"reasons for {verdict}", **fields}


def ruling_reply(verdict: str, **fields: Any) -> Reply:
    """The object as structured output, beside the text a runner prints: the verdict line and
    the reasons."""
    data = ruling_object(verdict, **fields)
    return say(f"VERDICT: {verdict}\n{data['reasons']}", structured=data)
