"""Structured owner and reviewer turns through the engine (DESIGN §3 "Structured turns"): the
object decides the marker when it is valid, an approval with conditions is not one, a missing
or invalid object falls back to the text marker, and the stored turn says which."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.engine_kit import engine_kit
from tests.fakes.rulings import ruling_reply as ruling
from tests.fakes.runner import Reply, Script, say
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


def _owner_rounds(n: int) -> list[Reply]:
    """Owner turns that each change the workspace (no `unchanged` deadlock) in new words."""
    return [work("DONE", files={"net.py": f"attempt = {i}\n"}, prose=f"try {i}") for i in range(n)]


async def test_a_reworded_stall_is_caught_by_its_ids_at_the_second_repeat(tmp_path: Path) -> None:
    # The same defect each round in new words; no id in the prose (the object carries it).
    script: Script = {
        "owner": [*_owner_rounds(4), work("DONE")],
        "reviewer": [
            review("CHANGES_REQUESTED", prose="The retry loop never gives up on a dead server.",
                   findings=[finding("", "net.py:40", "retry never stops")]),
            review("CHANGES_REQUESTED", prose="Requests are still repeated without any limit.",
                   findings=[finding("F1", "net.py:44", "unbounded attempts to reconnect")]),
            review("CHANGES_REQUESTED", prose="Nothing caps how often we dial the host again.",
                   findings=[finding("F1", "net.py:47", "a missing ceiling on redials")]),
            review("APPROVED", findings=[finding("F1", "net.py:47", "capped", "resolved")]),
        ],
        "arbiter": [ruling("REVISE", conditions=["stop retrying after the deadline"])],
    }  # fmt: skip
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal make the client retry")
        await kit.settle()
        roles = kit.roles()
        assert roles[:7] == ["owner", "reviewer"] * 3 + ["arbiter"]
        [firing] = await kit.store.firings(1)
        assert firing.firing.detector == "repeated_findings"
        assert firing.firing.extra["ids"] == ["F1"]
        assert "(F1) stayed open, none resolved, for 2 rounds" in firing.firing.reason
        # The engine numbered the new finding and listed it, with its id, to the reviewer.
        reviews = [t for t in await kit.store.turns(1) if t.role == "reviewer"]
        assert reviews[0].structured is not None
        assert [f["id"] for f in reviews[0].structured["findings"]] == ["F1"]
        second = kit.runner.calls_for("reviewer")[1].prompt
        assert "## Open findings (ids are the engine's)" in second
        assert "> **F1** `net.py:40`: retry never stops" in second
        assert "> **F1** `net.py:40`: retry never stops" in kit.runner.calls_for("owner")[1].prompt
        assert (await kit.task()).status == "closed"


async def test_a_pair_closing_one_finding_per_round_raises_nothing(tmp_path: Path) -> None:
    prose = "Still some issues left, see the findings."  # the same words every round
    items = [finding("", f"m.py:{n}", f"defect number {n}") for n in (1, 2, 3)]

    def left(resolved: int) -> list[dict[str, str]]:
        return [
            {**f, "id": f"F{i}", "status": "resolved" if i <= resolved else "open"}
            for i, f in enumerate(items, 1)
        ]

    script: Script = {
        "owner": [*_owner_rounds(4), work("DONE")],
        "reviewer": [
            review("CHANGES_REQUESTED", prose=prose, findings=items),
            review("CHANGES_REQUESTED", prose=prose, findings=left(1)),
            review("CHANGES_REQUESTED", prose=prose, findings=left(2)),
            review("APPROVED", prose="All fixed.", findings=left(3)),
        ],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal fix the module")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer"] * 4 + ["owner"]
        assert await kit.store.firings(1) == []
        assert (await kit.task()).status == "closed"
        # The chat shows the prose and a compact findings list.
        posted = [
            p.message.text for p in kit.platform.messages() if p.message.persona == "reviewer"
        ]
        assert posted[0].startswith(prose + "\n\n**Open findings (3)**\n- **F1** `m.py:1`: defect")
        assert "**Open findings (2)**" in posted[1]
        assert "**Since the last review:** F1 (resolved)" in posted[1]
        assert "F1 (resolved)" not in posted[2] and "F2 (resolved)" in posted[2]
        assert posted[3] == "All fixed.\n\n**Since the last review:** F3 (resolved)"


async def test_objects_naming_no_findings_are_compared_by_their_prose(tmp_path: Path) -> None:
    same = "- calc.py: div() crashes on a zero divisor; it must raise ValueError"
    script: Script = {
        "owner": [*_owner_rounds(4), work("DONE")],
        "reviewer": [review("CHANGES_REQUESTED", prose=same)] * 3 + [review("APPROVED")],
        "arbiter": [ruling("REVISE", conditions=["raise ValueError"])],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal make div safe")
        await kit.settle()
        [firing] = await kit.store.firings(1)
        assert firing.firing.detector == "repeated_findings"
        assert "structured" not in firing.firing.extra


async def test_the_reviewer_sees_what_the_owner_addressed_and_disputes(tmp_path: Path) -> None:
    two = [finding("", "a.py:1", "no test for zero"), finding("", "a.py:9", "typo in the name")]
    dispute = {"id": "F1", "evidence": "test_zero in tests/test_a.py covers it:  1 passed"}
    script: Script = {
        "owner": [
            work("DONE", files={"a.py": "1\n"}),
            work("DONE", files={"a.py": "2\n"}, addressed=["F2"], disputed=[dispute]),
            work("DONE"),
        ],
        "reviewer": [review("CHANGES_REQUESTED", findings=two), review("APPROVED")],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal fix a.py")
        await kit.settle()
        first, second = (c.prompt for c in kit.runner.calls_for("reviewer"))
        assert "## The owner's answer to the findings" not in first
        assert "## The owner's answer to the findings\n\nAddressed: F2" in second
        assert "> **F1**: test_zero in tests/test_a.py covers it: 1 passed" in second
