"""The rule for a turn's final (container/proxy/finals.py): the model's newest answer as the
proxy read it, compared with what the runner says, as a table."""

from __future__ import annotations

from typing import Any

import pytest

from container.proxy.answers import Answer
from container.proxy.finals import NOT_FROM_MODEL, checked_final
from runners.protocol import UNVERIFIED, RunEvent

OBJ = {"verdict": "CHANGES_REQUESTED", "findings": []}


def final(text: str, structured: dict[str, Any] | None = None) -> RunEvent:
    return RunEvent(kind="final", text=text, structured=structured)


# (case, the runner's final, the proxy's answer, the final passed on or None: refused)
ACCEPTED: list[tuple[str, RunEvent, Answer, RunEvent]] = [
    ("same text", final("DONE\nok"), Answer("DONE\nok"), final("DONE\nok")),
    ("runner trimmed it: the model's text goes on", final("APPROVED"),
     Answer("\nAPPROVED\n\n"), final("\nAPPROVED\n\n")),
    ("claude structured", final('{"verdict":"CHANGES_REQUESTED","findings":[]}', OBJ),
     Answer(None, OBJ), final('{"verdict":"CHANGES_REQUESTED","findings":[]}', OBJ)),
    ("claude structured, not an object", final("[1]", {"value": [1]}), Answer(None, [1]),
     final("[1]", {"value": [1]})),
    ("codex structured", final('{"verdict": "CHANGES_REQUESTED", "findings": []}', OBJ),
     Answer('{"verdict": "CHANGES_REQUESTED", "findings": []}'),
     final('{"verdict": "CHANGES_REQUESTED", "findings": []}', OBJ)),
    ("runner gave no structured: none goes on", final('{"a": 1}'), Answer('{"a": 1}'),
     final('{"a": 1}')),
    ("an empty answer", final(""), Answer(None), final("")),
]  # fmt: skip

REFUSED: list[tuple[str, RunEvent, Answer | None, str]] = [
    ("no answer at all (no model asked)", final("APPROVED"), None, "no complete answer"),
    ("other text", final("APPROVED"), Answer("CHANGES_REQUESTED\nno"), "not the model's last"),
    ("the model's words, but not all", final("APPROVED"), Answer("APPROVED once tests pass"),
     "not the model's last"),
    ("the answer asked for a tool", final("Looking"), Answer("Looking", calls_tools=True),
     "asked for a tool"),
    ("not whole", final("APPROVED"), Answer("APPROVED", whole=False), "could not be read whole"),
    ("structured object differs", final('{"verdict":"APPROVED"}', {"verdict": "APPROVED"}),
     Answer(None, OBJ), "not the object"),
    ("structured text differs", final('{"verdict":"APPROVED"}', OBJ), Answer(None, OBJ),
     "not the object"),
    ("codex structured differs", final(str(OBJ), {"verdict": "APPROVED"}),
     Answer('{"verdict": "CHANGES_REQUESTED", "findings": []}'), "not the model's last"),
    ("codex structured not in the text", final('{"a": 1}', {"a": 2}), Answer('{"a": 1}'),
     "structured output is not"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "said", "answer", "expected"), ACCEPTED,
                         ids=[c[0] for c in ACCEPTED])  # fmt: skip
def test_accepted(case: str, said: RunEvent, answer: Answer, expected: RunEvent) -> None:
    assert checked_final(said, answer) == expected


@pytest.mark.parametrize(("case", "said", "answer", "why"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case: str, said: RunEvent, answer: Answer | None, why: str) -> None:
    event = checked_final(said, answer)
    assert event.kind == "error" and event.code == UNVERIFIED
    assert event.text.startswith(f"{NOT_FROM_MODEL}: ") and why in event.text
    assert event.text.endswith("; the turn's answer is not used")
