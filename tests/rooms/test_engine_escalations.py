"""Escalations: who may answer, what an answer does, stale clicks, ceilings."""

from __future__ import annotations

from pathlib import Path

from rooms.base.model import GroupPolicy, Thresholds
from runners.protocol import RunSpec
from tests.fakes.engine_kit import FakeClock, Kit, engine_kit
from tests.fakes.runner import Script, fail
from tests.rooms.test_engine_arbitration import BLOCKED, ruling

ESCALATING: Script = {
    "owner": [BLOCKED, "DONE\ncarried on", "DONE\nwrapped"],
    "arbiter": [
        ruling(
            "ESCALATE",
            question="May we use the production key?",
            options=["yes", "no, use a mock"],
        )
    ],
    "reviewer": ["APPROVED"],
}


async def escalated(kit: Kit) -> str:
    await kit.say("@tribunal add integration tests")
    await kit.settle()
    assert (await kit.task()).status == "waiting_human"
    return await kit.escalation_id()


async def test_a_non_approver_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, ESCALATING) as kit:
        esc_id = await escalated(kit)
        before = await kit.task()
        await kit.click("approve", esc_id, user="mallory")
        await kit.say("just go ahead", user="mallory", mention=False)
        await kit.say("@tribunal approve", user="mallory")
        await kit.settle()
        refusals = [t for t in kit.platform.texts() if "only approvers can answer" in t]
        assert refusals == ["mallory: only approvers can answer: boss."] * 3
        private = [
            p.message.private_to for p in kit.platform.messages() if "only approvers" in p.text
        ]
        assert private == ["mallory"] * 3  # for mallory's eyes only where the platform can
        assert await kit.task() == before
        assert await kit.store.messages(1) == []
        assert len(kit.runner.calls) == 2


async def test_an_approvers_click_resumes_the_task(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, ESCALATING) as kit:
        esc_id = await escalated(kit)
        # The question offers options: the approver's click picks one (issue 26: Approve
        # would pick none of them and is refused, tests/rooms/test_approve_on_options.py).
        await kit.click("choose", f"{esc_id}.1", user="boss")
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert kit.roles() == ["owner", "arbiter", "owner", "reviewer", "owner"]
        said = 'chose option 1 of "May we use the production key?": yes'
        assert said in kit.runner.calls[2].prompt
        esc = await kit.store.escalation(int(esc_id))
        assert esc is not None and (esc.status, esc.answered_by) == ("answered", "boss")
        assert "boss chose an option; the owner continues with task #1." in kit.platform.texts()


async def test_a_stale_click_gets_a_stale_reply_and_changes_nothing(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, ESCALATING) as kit:
        esc_id = await escalated(kit)
        await kit.click("choose", f"{esc_id}.1", user="boss")
        await kit.settle()
        after = await kit.task()
        await kit.click("reject", esc_id, user="boss")  # the same button, later
        await kit.click("approve", "9999", user="boss")  # no such escalation
        await kit.click("approve", "not-a-number", user="boss")
        await kit.click("approve", "²", user="boss")  # a digit to str.isdigit, not to int()
        await kit.click("approve", "9" * 30, user="boss")  # past SQLite's integers
        await kit.settle()
        stale = [t for t in kit.platform.texts() if "is stale" in t]
        assert len(stale) == 5
        assert stale[0].startswith(f"That question (escalation #{esc_id}) is stale")
        assert await kit.task() == after


async def test_reject_closes_the_task(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, ESCALATING) as kit:
        await escalated(kit)
        await kit.say("@tribunal reject", user="boss")
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert "Task #1 closed: boss rejected the escalation." in kit.platform.texts()
        assert len(kit.runner.calls) == 2


async def test_approve_as_a_command_without_an_open_question(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, {}) as kit:
        await kit.say("@tribunal approve", user="boss")
        await kit.settle()
        assert kit.platform.texts() == ["There is no open question to answer here."]


async def test_with_no_approvers_configured_nobody_may_answer(tmp_path: Path) -> None:
    """Only configured approvers decide: an empty list is nobody, never everybody."""
    async with engine_kit(tmp_path, ESCALATING, approvers=frozenset()) as kit:
        esc_id = await escalated(kit)
        announced = kit.platform.last_actions()
        assert announced is not None and "No approvers are configured" in announced.text
        await kit.click("approve", esc_id, user="anyone")
        await kit.say("yes, go ahead", user="anyone")
        await kit.settle()
        task = await kit.task()
        assert task.status == "waiting_human"
        refusals = [t for t in kit.platform.texts() if t.startswith("anyone: No approvers")]
        assert len(refusals) == 2
        # Nor can anyone stop it: only the person who opened it (here alice) may.
        await kit.say("@tribunal stop", user="anyone")
        await kit.settle()
        assert (await kit.task()).status == "waiting_human"
        await kit.say("@tribunal stop", user="alice")
        await kit.settle()
        assert (await kit.task()).status == "closed"


async def test_a_turn_ceiling_asks_the_humans_and_approval_grants_another_budget(
    tmp_path: Path,
) -> None:
    policy = GroupPolicy(
        name="g", approvers=frozenset({"boss"}), thresholds=Thresholds(max_turns=2)
    )
    script: Script = {
        "owner": ["DONE\nv1", "DONE\nv2", "DONE\nwrapped"],
        "reviewer": ["CHANGES_REQUESTED\n- more", "APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer"]
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "ceiling"
        assert "2 turns, the limit is 2" in esc.reason
        await kit.click("approve", str(esc.id))
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "owner", "reviewer", "owner"]
        assert (await kit.task()).status == "closed"
        assert (await kit.store.task_extras(1))["grants"] == 1


async def test_a_wall_time_ceiling_is_never_a_silent_stop(tmp_path: Path) -> None:
    clock = FakeClock()
    policy = GroupPolicy(
        name="g", approvers=frozenset({"boss"}), thresholds=Thresholds(max_wall_s=3600)
    )
    async with engine_kit(tmp_path, {}, policy=policy, clock=clock) as kit:

        def slow(spec: RunSpec) -> str:
            clock.advance(4000)  # each turn takes longer than an hour
            return "DONE\nslow"

        kit.runner.decide = slow
        await kit.say("@tribunal build")
        await kit.settle()
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "ceiling"
        assert "the limit is 1 h 0 min" in esc.reason
        assert any(t.startswith("❓ Task #1 needs a decision") for t in kit.platform.texts())


async def test_time_waiting_for_people_does_not_count_toward_the_wall_ceiling(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    policy = GroupPolicy(
        name="g", approvers=frozenset({"boss"}), thresholds=Thresholds(max_wall_s=4 * 3600)
    )
    async with engine_kit(tmp_path, ESCALATING, policy=policy, clock=clock) as kit:
        esc_id = await escalated(kit)
        clock.advance(5 * 3600)  # the approver answers the next morning
        await kit.click("choose", f"{esc_id}.1", user="boss")
        await kit.settle()
        # The owner carried on, the reviewer approved, the task closed: no "ran for 5 h" ceiling.
        assert (await kit.task()).status == "closed"
        assert [e.kind for e in await kit.store.escalations(1)] == ["ruling"]


async def test_a_failed_twice_escalation_names_the_failure_and_approve_retries(
    tmp_path: Path,
) -> None:
    script: Script = {
        "owner": [
            fail("crashed", "exit status 3"),
            fail("crashed", "exit status 3"),
            "DONE",
            "DONE",
        ],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "failure"
        assert "owner turn 2 failed (crashed): exit status 3" in esc.reason
        await kit.click("approve", str(esc.id))
        await kit.settle()
        assert (await kit.task()).status == "closed"


async def test_a_waiting_task_stays_waiting_across_a_restart(tmp_path: Path) -> None:
    db = str(tmp_path / "shared.db")
    async with engine_kit(tmp_path, ESCALATING, db=db) as kit:
        esc_id = await escalated(kit)
    script: Script = {"owner": ["DONE\ncarried on", "DONE"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, script, db=db) as kit:
        await kit.settle()
        assert (await kit.task()).status == "waiting_human"
        assert kit.runner.calls == []
        assert kit.platform.texts() == []  # nothing was posted again
        await kit.click("choose", f"{esc_id}.1")
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert kit.roles() == ["owner", "reviewer", "owner"]
