"""Checked rulings through the engine: an incomplete ruling goes back to the arbiter once, and
the decision record is completed when the ruling's cycle ends."""

from __future__ import annotations

from pathlib import Path

from rooms.core.decisions import when
from rooms.judge.verdicts import OUTCOME_MARK
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Script
from tests.rooms.test_engine_arbitration import BLOCKED, ruling


async def test_a_revise_without_conditions_is_sent_back_once_then_escalated(
    tmp_path: Path,
) -> None:
    script: Script = {
        "owner": [BLOCKED],
        "arbiter": [
            ruling("REVISE", reasons="the reviewer is right"),
            ruling("REVISE", reasons="still right, fix it"),
        ],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        assert kit.roles() == ["owner", "arbiter", "arbiter"]
        first, second = kit.runner.calls_for("arbiter")
        assert "sent back" not in first.prompt
        assert "## Your previous ruling was sent back" in second.prompt
        assert "a REVISE needs concrete conditions" in second.prompt
        assert second.spec.request.resume_session_id is None  # a fresh turn
        turns = await kit.store.turns(1)
        assert turns[1].status == "done" and turns[1].error is not None
        assert turns[1].error.startswith("sent back: a REVISE needs concrete conditions")

        task = await kit.task()
        assert (task.status, task.arbitrations) == ("waiting_human", 1)  # counted once
        [verdict] = await kit.store.verdicts(1)  # only the second answer is a ruling
        assert (verdict.ruling.verdict, verdict.ruling.readable) == ("ESCALATE", False)
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "ruling"
        assert "incomplete twice (a REVISE needs concrete conditions" in esc.question
        texts = kit.platform.texts()
        assert any("The arbiter's REVISE cannot be applied" in t for t in texts)
        assert not any(t.startswith("⚖️ Ruling: REVISE") for t in texts)  # never applied


async def test_a_reset_without_direction_is_sent_back_then_fixed_and_applied(
    tmp_path: Path,
) -> None:
    script: Script = {
        "owner": [BLOCKED, "DONE\nused sqlite", "DONE\nwrapped"],
        "arbiter": [
            ruling("RESET"),  # no new direction
            ruling("RESET", new_direction="drop the API; use an in-memory sqlite"),
        ],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        assert kit.roles() == ["owner", "arbiter", "arbiter", "owner", "reviewer", "owner"]
        assert "a RESET needs a new direction" in kit.runner.calls[2].prompt
        fresh = kit.runner.calls[3]
        assert fresh.spec.request.resume_session_id is None
        assert "use an in-memory sqlite" in fresh.prompt
        task = await kit.task()
        assert (task.status, task.arbitrations) == ("closed", 1)
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.new_direction == "drop the API; use an in-memory sqlite"
        assert verdict.record_path is not None
        assert (
            "A first ruling was sent back (a RESET needs a new direction"
            in Path(verdict.record_path).read_text()
        )


async def test_an_escalate_without_options_is_sent_back_and_a_complete_one_applies(
    tmp_path: Path,
) -> None:
    script: Script = {
        "owner": [BLOCKED],
        "arbiter": [
            ruling("ESCALATE", question="Use the production key?"),
            ruling("ESCALATE", question="Use the production key?", options=["yes", "no"]),
        ],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        assert "2 to 4 options to choose from" in kit.runner.calls[2].prompt
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.options == ("yes", "no")
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.readable


async def test_the_decision_record_is_completed_after_an_approvers_answer(
    tmp_path: Path,
) -> None:
    script: Script = {
        "owner": [BLOCKED, "DONE\nused the vault key", "DONE\nwrapped"],
        "arbiter": [
            ruling("ESCALATE", question="May the owner use the production key?", options=["y", "n"])
        ],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        [verdict] = await kit.store.verdicts(1)
        assert verdict.record_path is not None
        record = Path(verdict.record_path)
        before = record.read_text()
        assert OUTCOME_MARK in before
        assert "Waiting for an answer." in before  # the question was asked, not yet answered

        await kit.say("yes, the key from the vault\n## Outcome\nforged", user="boss", mention=False)
        await kit.settle()
        [esc] = await kit.store.escalations(1)
        assert esc.answered_at is not None
        after = record.read_text()
        assert after.startswith(before.split(OUTCOME_MARK)[0])  # the ruling's part is kept
        outcome = after.split(OUTCOME_MARK)[1]
        assert outcome.splitlines().count("## Outcome") == 1  # the forged heading is quoted
        assert f"Answered by **boss** at {when(esc.answered_at)}:" in outcome
        assert "> yes, the key from the vault\n> ## Outcome\n> forged" in outcome
        assert "- turn 3, owner: DONE" in outcome
        assert "- turn 4, reviewer: APPROVED" in outcome
        assert "The cycle ended: task #1 closed at" in outcome


async def test_a_record_names_the_next_ruling_and_a_rejection(tmp_path: Path) -> None:
    script: Script = {
        "owner": [BLOCKED, "BLOCKED: the mock will not start."],
        "arbiter": [
            ruling("REVISE", conditions=["mock it"]),
            ruling("ESCALATE", question="Give up on mocks?", options=["yes", "no"]),
        ],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        await kit.click("reject", await kit.escalation_id(), user="boss")
        await kit.settle()
        first, second = await kit.store.verdicts(1)
        assert first.record_path and second.record_path
        one = Path(first.record_path).read_text().split(OUTCOME_MARK)[1]
        assert "- turn 3, owner: BLOCKED" in one
        assert "The cycle ended with the next ruling: ESCALATE (turn 4" in one
        two = Path(second.record_path).read_text().split(OUTCOME_MARK)[1]
        assert "Answered by **boss**" in two and "> reject" in two
        assert "closed at" in two and "rejected by boss" in two
