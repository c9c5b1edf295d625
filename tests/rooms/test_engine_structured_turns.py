"""Structured owner and reviewer turns through the engine (DESIGN §3 "Structured turns"): the
object decides the marker when it is valid, an approval with conditions is not one, a missing
or invalid object falls back to the text marker, and the stored turn says which."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.engine_kit import engine_kit
from tests.fakes.rulings import ruling_reply as ruling
from tests.fakes.runner import Script, say
from tests.fakes.turn_objects import finding, review, review_object, work


async def test_an_approval_with_conditions_is_changes_requested(tmp_path: Path) -> None:
    script: Script = {
        "owner": [work("DONE"), work("DONE", prose="ran the migration"), work("DONE")],
        "reviewer": [
            # The text says APPROVED too: the object's conditions decide.
            review("APPROVED", "APPROVED", conditions=["run the migration on staging first"]),
            review("APPROVED"),
        ],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add the column")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "owner", "reviewer", "owner"]
        turns = await kit.store.turns(1)
        first_review = turns[1]
        assert (first_review.marker, first_review.marker_source) == ("CHANGES_REQUESTED", "object")
        assert first_review.structured is not None
        assert first_review.structured["conditions"] == ["run the migration on staging first"]
        assert [(t.marker, t.marker_source) for t in turns] == [
            ("DONE", "object"),
            ("CHANGES_REQUESTED", "object"),
            ("DONE", "object"),
            ("APPROVED", "object"),
            ("DONE", "object"),
        ]
        assert (await kit.task()).status == "closed"
        # The chat shows the prose, not the raw output.
        assert "work: DONE" in kit.platform.texts()


async def test_the_object_wins_over_the_text(tmp_path: Path) -> None:
    script: Script = {
        "owner": [work("DONE"), work("DONE")],
        # Text that would read CHANGES_REQUESTED; the validated object approves.
        "reviewer": [review("APPROVED", "CHANGES_REQUESTED\nnot yet")],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add the column")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "owner"]
        assert (await kit.task()).status == "closed"


async def test_an_invalid_object_falls_back_to_the_text_and_says_so(tmp_path: Path) -> None:
    bad = {**review_object("APPROVED"), "verdict": "SHIP_IT"}
    no_findings_list = {**review_object("APPROVED"), "findings": "none"}
    script: Script = {
        "owner": [work("DONE"), work("DONE"), work("DONE")],
        "reviewer": [
            say("CHANGES_REQUESTED\nthe test is missing", structured=bad),
            say("APPROVED", structured=no_findings_list),
        ],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add the column")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "owner", "reviewer", "owner"]
        reviews = [t for t in await kit.store.turns(1) if t.role == "reviewer"]
        assert [(t.marker, t.marker_source) for t in reviews] == [
            ("CHANGES_REQUESTED", "text"),
            ("APPROVED", "text"),
        ]
        assert "the test is missing" in kit.platform.texts()[2]


async def test_no_object_and_no_marker_is_not_an_approval(tmp_path: Path) -> None:
    script: Script = {
        "owner": [work("DONE"), work("DONE"), work("DONE")],
        "reviewer": [say("looks fine to me I think"), review("APPROVED")],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add the column")
        await kit.settle()
        first = [t for t in await kit.store.turns(1) if t.role == "reviewer"][0]
        assert (first.marker, first.unmarked, first.marker_source) == (
            "CHANGES_REQUESTED",
            True,
            "text",
        )


async def test_an_owner_object_saying_blocked_calls_the_arbiter(tmp_path: Path) -> None:
    script: Script = {
        # The text says DONE; the object says BLOCKED, and the object decides.
        "owner": [work("BLOCKED", "DONE", prose="I need the API key"), work("DONE"), work("DONE")],
        "arbiter": [ruling("REVISE", conditions=["mock the API"])],
        "reviewer": [review("APPROVED", findings=[finding("", "a.py:1", "nit", "withdrawn")])],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        assert kit.roles() == ["owner", "arbiter", "owner", "reviewer", "owner"]
        assert "I need the API key" in kit.runner.calls[1].prompt
