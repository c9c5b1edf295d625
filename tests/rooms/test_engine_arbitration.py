"""Deadlocks and rulings: each verdict's effect, the caps the engine enforces, decision records."""

from __future__ import annotations

from pathlib import Path

from rooms.base.model import GroupPolicy, Thresholds
from rooms.judge.verdicts import RULING_SCHEMA
from tests.fakes.engine_kit import engine_kit
from tests.fakes.rulings import ruling_reply as ruling
from tests.fakes.runner import Script

BLOCKED = "BLOCKED: I need the staging API key to run the integration tests."


async def test_blocked_goes_to_the_arbiter_and_revise_sends_conditions_to_the_owner(
    tmp_path: Path,
) -> None:
    script: Script = {
        "owner": [BLOCKED, "DONE\nmocked the API", "DONE\nwrapped"],
        "arbiter": [ruling("REVISE", conditions=["mock the API in the tests", "document it"])],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        assert kit.roles() == ["owner", "arbiter", "owner", "reviewer", "owner"]
        arbiter = kit.runner.calls[1]
        request = arbiter.spec.request
        assert request.read_only is True
        assert request.resume_session_id is None
        assert request.output_schema == RULING_SCHEMA
        assert "## Why you were called" in arbiter.prompt
        assert "the owner reported BLOCKED" in arbiter.prompt
        assert "staging API key" in arbiter.prompt
        owner_after = kit.runner.calls[2]
        assert "The arbiter ruled REVISE" in owner_after.prompt
        # The conditions are the arbiter's words: quoted, never the engine's own lines.
        assert "\n> - mock the API in the tests\n> - document it" in owner_after.prompt
        assert "\n- mock the API" not in owner_after.prompt
        assert owner_after.spec.request.resume_session_id == "sess-owner-1"
        # The later reviewer is not told to act on the old ruling, only shown it.
        assert "The arbiter ruled REVISE" not in kit.runner.calls[3].prompt

        task = await kit.task()
        assert (task.status, task.arbitrations) == ("closed", 1)
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.verdict == "REVISE"
        assert verdict.ruling.conditions == ["mock the API in the tests", "document it"]
        [firing] = await kit.store.firings(1)
        assert firing.firing.detector == "blocked" and verdict.firing_id == firing.id
        assert verdict.record_path is not None
        record = Path(verdict.record_path).read_text()
        assert "# Decision record: REVISE" in record and "mock the API" in record
        texts = kit.platform.texts()
        assert any(t.startswith("🔎 Deadlock detector `blocked`") for t in texts)
        posted_ruling = next(t for t in texts if t.startswith("⚖️ Ruling: REVISE"))
        assert f"Decision record: {verdict.record_path}" in posted_ruling


async def test_reset_starts_the_owner_on_a_fresh_session_with_the_new_direction(
    tmp_path: Path,
) -> None:
    script: Script = {
        "owner": [BLOCKED, "DONE\nused sqlite", "DONE\nwrapped"],
        "arbiter": [ruling("RESET", new_direction="drop the API; use an in-memory sqlite")],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        fresh = kit.runner.calls[2]
        assert fresh.role == "owner"
        assert fresh.spec.request.resume_session_id is None
        assert "start over in this direction" in fresh.prompt
        assert "use an in-memory sqlite" in fresh.prompt
        wrap = kit.runner.calls[4]
        assert wrap.spec.request.resume_session_id == "sess-owner-3"  # the new session
        assert (await kit.task()).status == "closed"


async def test_proceed_sends_the_reviewer_back_with_the_ruling(tmp_path: Path) -> None:
    script: Script = {
        "owner": ["DONE\nfirst", "DONE\nwrapped"],
        "reviewer": [
            "NEEDS_CONTEXT\nIs Python 3.10 support required?",
            "APPROVED\nfine as is",
        ],
        "arbiter": [ruling("PROCEED", reasons="3.11 is the floor; review as is")],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal port it")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "arbiter", "reviewer", "owner"]
        assert "3.11 is the floor" in kit.runner.calls[3].prompt
        assert (await kit.task()).status == "closed"
        assert (await kit.task()).rounds == 1  # the ruling reset it; one review since


async def test_escalate_waits_for_a_person_with_buttons(tmp_path: Path) -> None:
    script: Script = {
        "owner": [BLOCKED, "DONE\nused the key", "DONE\nwrapped"],
        "arbiter": [
            ruling(
                "ESCALATE",
                question="May the owner use the production key?",
                options=["yes", "no, use a mock"],
            )
        ],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        task = await kit.task()
        assert task.status == "waiting_human"
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "ruling"
        assert esc.options == ("yes", "no, use a mock")
        announced = kit.platform.last_actions()
        assert announced is not None
        assert "May the owner use the production key?" in announced.message.text
        # One button per option (its number bound to the escalation), then Reject; no Approve.
        assert [(a.action, a.value) for a in announced.message.actions] == [
            ("choose", f"{esc.id}.1"),
            ("choose", f"{esc.id}.2"),
            ("reject", str(esc.id)),
        ]
        await kit.say("yes, use the key from the vault", user="boss", mention=False)
        await kit.settle()
        assert (await kit.task()).status == "closed"
        resumed = kit.runner.calls[2]
        answer = "- boss (answer to an escalation) wrote:\n> yes, use the key from the vault"
        assert answer in resumed.prompt


async def test_an_unreadable_ruling_escalates_and_never_proceeds(tmp_path: Path) -> None:
    script: Script = {
        "owner": [BLOCKED],
        "arbiter": ["I think we should probably proceed, but who knows."],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        assert (await kit.task()).status == "waiting_human"
        [verdict] = await kit.store.verdicts(1)
        assert (verdict.ruling.verdict, verdict.ruling.readable) == ("ESCALATE", False)
        assert any("could not be read" in t for t in kit.platform.texts())
        assert kit.roles() == ["owner", "arbiter"]


async def test_at_most_two_arbitrations_then_the_humans_decide(tmp_path: Path) -> None:
    script: Script = {
        "owner": [
            BLOCKED,
            "BLOCKED: the mock server will not start on CI.",
            "BLOCKED: CI has no docker either.",
        ],
        "arbiter": [ruling("REVISE", conditions=["mock it"]), ruling("REVISE", conditions=["x"])],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        assert kit.roles() == ["owner", "arbiter", "owner", "arbiter", "owner"]
        task = await kit.task()
        assert (task.status, task.arbitrations) == ("waiting_human", 2)
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "arbitration_cap"
        assert "CI has no docker" in esc.reason
        assert "2 arbitrations allowed" in esc.question


async def test_proceed_then_the_same_blocked_reason_escalates(tmp_path: Path) -> None:
    script: Script = {
        "owner": [BLOCKED, BLOCKED],
        "reviewer": ["CHANGES_REQUESTED\n- the integration tests are still missing"],
        "arbiter": [ruling("PROCEED", reasons="the reviewer can judge without the key")],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        assert kit.roles() == ["owner", "arbiter", "reviewer", "owner"]
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "repeat"
        assert "ruled PROCEED on this before" in esc.question
        assert (await kit.task()).arbitrations == 1  # not arbitrated again


async def test_proceed_then_the_same_stagnation_escalates(tmp_path: Path) -> None:
    same_owner = "DONE\nI believe the function is correct as written."
    same_review = "CHANGES_REQUESTED\n- parse() still returns None for an empty string"
    policy = GroupPolicy(
        name="g",
        approvers=frozenset({"boss"}),
        # Only stagnation may fire here, so the test sees that one detector come back.
        thresholds=Thresholds(repeated_findings_rounds=50, round_cap=50),
        swap_check=False,  # one scripted reading per ruling
    )
    runner_script: Script = {
        "owner": [same_owner] * 6,
        "reviewer": [same_review] * 7,
        "arbiter": [ruling("PROCEED", reasons="the owner is right; review again")],
    }
    async with engine_kit(tmp_path, runner_script, policy=policy) as kit:
        await kit.say("@tribunal fix parse()")
        await kit.settle()
        # Three identical rounds → stagnation → PROCEED → the reviewer re-checks; the very
        # first full round that repeats the one ruled on escalates: no second arbitration,
        # and no waiting for the repeat window to fill again.
        assert kit.roles() == [
            *["owner", "reviewer"] * 3,
            "arbiter",
            "reviewer",
            "owner",
            "reviewer",
        ]
        firings = await kit.store.firings(1)
        assert [f.firing.detector for f in firings] == ["stagnation", "stagnation"]
        assert firings[0].firing.fingerprint == firings[1].firing.fingerprint
        assert "ruled PROCEED on has come back" in firings[1].firing.reason
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "repeat"
        assert (await kit.task()).arbitrations == 1


async def test_a_detector_firing_sends_a_done_owner_to_arbitration(tmp_path: Path) -> None:
    """A content detector (not a marker) calls the arbiter: the `deadlock` transition."""
    review = "CHANGES_REQUESTED\n- the cache is never invalidated"
    script: Script = {
        "owner": ["DONE\nadded a cache", "DONE\nadded a cache v2", "DONE\nadded a cache v3"],
        "reviewer": [review, review, review],
        "arbiter": [ruling("ESCALATE", question="Is a stale cache acceptable?")],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add a cache")
        await kit.settle()
        [firing] = await kit.store.firings(1)
        assert firing.firing.detector == "repeated_findings"
        assert kit.roles()[-1] == "arbiter"
        assert "the reviewer's findings have not changed" in kit.runner.calls[-1].prompt


async def test_a_ruling_without_data_dir_is_stored_without_a_record(tmp_path: Path) -> None:
    script: Script = {
        "owner": [BLOCKED],
        "arbiter": [ruling("ESCALATE", question="key?", options=["yes", "no"])],
    }
    async with engine_kit(tmp_path, script, data_dir="") as kit:
        kit.engine.ctx.data_dir = None
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        [verdict] = await kit.store.verdicts(1)
        assert verdict.record_path is None
