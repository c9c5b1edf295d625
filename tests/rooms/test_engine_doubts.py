"""Readings in doubt are stored with the turn and counted (issue 26): a reviewer's turn whose
marker the engine cannot take as written, from its text ("conflicting", "qualified",
"uncertain": rooms/base/markers.py) or from its object (an APPROVED with conditions, or with a
finding of its own list still open), is not an approval, and the stored turn says why
(`turns.marker_doubt`); the status counts them.

Attacked as a reviewer that wants the work closed would: an APPROVED object carrying an open
finding (new, or one it was shown), in either letter case of the status it cannot use, and
with the text saying APPROVED too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Script, say
from tests.fakes.turn_objects import finding, review, work


def approved_with(*findings: dict[str, str]) -> object:
    return review("APPROVED", "APPROVED\nall good", findings=list(findings))


@pytest.mark.parametrize(
    "findings",
    [
        [finding("", "a.py:3", "the zero case still divides by zero")],  # a new one, open
        [
            finding("", "a.py:1", "fine now", status="resolved"),
            finding("", "a.py:9", "still no test", status="open"),
        ],
    ],
    ids=["new-open", "one-of-two-open"],
)
async def test_an_approval_with_an_open_finding_of_its_own_is_not_one(
    tmp_path: Path, findings: list[dict[str, str]]
) -> None:
    script: Script = {
        "owner": [work("DONE"), work("DONE"), work("DONE")],
        "reviewer": [approved_with(*findings), review("APPROVED")],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal fix a.py")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "owner", "reviewer", "owner"]
        first = [t for t in await kit.store.turns(1) if t.role == "reviewer"][0]
        assert (first.marker, first.marker_source, first.marker_doubt) == (
            "CHANGES_REQUESTED",
            "object",
            "open_findings",
        )
        assert (await kit.task()).status == "closed"  # the second, clean approval closes it


async def test_an_open_finding_shown_before_and_kept_open_blocks_the_approval(
    tmp_path: Path,
) -> None:
    script: Script = {
        "owner": [work("DONE"), work("DONE"), work("DONE"), work("DONE")],
        "reviewer": [
            review("CHANGES_REQUESTED", findings=[finding("", "a.py:1", "no test for zero")]),
            approved_with(finding("F1", "a.py:1", "no test for zero", status="open")),
            approved_with(finding("F1", "a.py:1", "no test for zero", status="resolved")),
        ],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal fix a.py")
        await kit.settle()
        reviews = [t for t in await kit.store.turns(1) if t.role == "reviewer"]
        assert [(t.marker, t.marker_doubt) for t in reviews] == [
            ("CHANGES_REQUESTED", None),
            ("CHANGES_REQUESTED", "open_findings"),
            ("APPROVED", None),
        ]
        assert (await kit.task()).status == "closed"


async def test_resolved_and_withdrawn_findings_do_not_block_an_approval(tmp_path: Path) -> None:
    script: Script = {
        "owner": [work("DONE"), work("DONE")],
        "reviewer": [
            approved_with(
                finding("", "a.py:1", "was wrong", status="resolved"),
                finding("", "a.py:2", "not a defect", status="withdrawn"),
            )
        ],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal fix a.py")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "owner"]
        review_turn = [t for t in await kit.store.turns(1) if t.role == "reviewer"][0]
        assert (review_turn.marker, review_turn.marker_doubt) == ("APPROVED", None)


async def test_conditions_are_stored_as_the_doubt(tmp_path: Path) -> None:
    script: Script = {
        "owner": [work("DONE"), work("DONE"), work("DONE")],
        "reviewer": [
            review("APPROVED", conditions=["once CI is green"]),
            review("APPROVED"),
        ],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal fix a.py")
        await kit.settle()
        first = [t for t in await kit.store.turns(1) if t.role == "reviewer"][0]
        assert (first.marker, first.marker_doubt) == ("CHANGES_REQUESTED", "conditions")


@pytest.mark.parametrize(
    ("text", "doubt"),
    [
        ("APPROVED — the docs still need a section on limits", "uncertain"),
        ("APPROVED as long as the migration runs on staging first", "qualified"),
        ("APPROVED\n\nCHANGES_REQUESTED: the test fails", "conflicting"),
    ],
)
async def test_the_text_paths_doubt_is_stored_and_counted(
    tmp_path: Path, text: str, doubt: str
) -> None:
    script: Script = {"owner": ["DONE", "DONE", "DONE"], "reviewer": [say(text), "APPROVED"]}
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal fix a.py")
        await kit.settle()
        first = [t for t in await kit.store.turns(1) if t.role == "reviewer"][0]
        assert (first.marker, first.marker_source, first.marker_doubt) == (
            "CHANGES_REQUESTED",
            "text",
            doubt,
        )
        await kit.say("@tribunal status")
        await kit.settle()
        status = kit.platform.texts()[-1]
        assert f"Markers: 5 read from text, 0 from objects · 1 in doubt ({doubt})" in status


async def test_a_plain_approval_has_no_doubt(tmp_path: Path) -> None:
    script: Script = {"owner": ["DONE", "DONE"], "reviewer": ["APPROVED\nverified the retry"]}
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal fix a.py")
        await kit.settle()
        assert [t.marker_doubt for t in await kit.store.turns(1)] == [None, None, None]
