"""`tribunal replay --json` says, per owner and reviewer turn, where its marker came from (its
object or its text) and why the reading was in doubt, so both can be counted (issue 26). A
transcript's turn may carry its output object (`structured`, as the store keeps it): replay reads
it first, as the engine does, and falls back to the text when it is missing or invalid."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bot.cli import main
from tests.fakes.turn_objects import finding, review_object, work_object

TURNS = [
    {"role": "owner", "text": "done", "structured": work_object("DONE")},
    # The object says APPROVED and leaves its own finding open: in doubt, not approved.
    {
        "role": "reviewer",
        "text": "APPROVED",
        "structured": review_object(
            "APPROVED", findings=[finding("", "a.py:3", "zero divides", status="open")]
        ),
    },
    {"role": "owner", "text": "DONE\nfixed the zero case"},  # no object: text
    # An invalid object (a verdict the schema has not): the text is read, and it is in doubt.
    {
        "role": "reviewer",
        "text": "APPROVED — the docs still need a section",
        "structured": {**review_object("APPROVED"), "verdict": "SHIP_IT"},
    },
    {"role": "human", "text": "go on"},
    {"role": "owner", "text": "", "structured": work_object("DONE")},
    {"role": "reviewer", "text": "", "structured": review_object("APPROVED")},
]


def test_each_row_says_object_or_text_and_why_in_doubt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "room.json"
    path.write_text(json.dumps({"task": "fix a.py", "turns": TURNS}), encoding="utf-8")
    assert main(["replay", str(path), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["marker"], r["marker_source"], r["doubt"]) for r in rows] == [
        ("DONE", "object", None),
        ("CHANGES_REQUESTED", "object", "open_findings"),
        ("DONE", "text", None),
        ("CHANGES_REQUESTED", "text", "uncertain"),
        (None, None, None),  # a human message has no marker
        ("DONE", "object", None),
        ("APPROVED", "object", None),
    ]
    # Counted as a person would count them.
    assert Counter(r["marker_source"] for r in rows if r["marker_source"]) == {
        "object": 4,
        "text": 2,
    }
    assert sum(1 for r in rows if r["doubt"]) == 2


def test_a_transcripts_object_must_be_an_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "room.json"
    turns = [{"role": "owner", "text": "DONE", "structured": "DONE"}]
    path.write_text(json.dumps({"task": "t", "turns": turns}), encoding="utf-8")
    assert main(["replay", str(path), "--json"]) == 2
    assert "structured" in capsys.readouterr().err
