"""The task's budget at the credential proxy, as the engine sees it: each turn's spec carries
the tokens (and dollars) left; a turn the proxy stopped for the budget (code `budget`) is a
ceiling, not a failure to retry: the humans are asked at once, with the proxy's reason, and an
approval grants another budget of the same size. A turn cut short (stop, takeover, a lost
lease) keeps the usage it had spent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from rooms.base.model import GroupPolicy, Thresholds
from runners.protocol import BUDGET, RunEvent, RunSpec
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Reply, Script, ScriptedRunner, fail

REASON = "the task's token budget is spent: this turn used 1,200 of the 1,000 tokens left"


async def test_each_spec_carries_the_tokens_left(tmp_path: Path) -> None:
    policy = GroupPolicy(
        name="g", approvers=frozenset({"boss"}), thresholds=Thresholds(max_tokens=1000)
    )
    script: Script = {"owner": ["DONE\nv1", "DONE\nwrapped"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, script, policy=policy) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        left = [(c.role, c.spec.tokens_left) for c in kit.runner.calls]
        # 120 tokens a turn; the wrap-up of approved work has no token ceiling (it always runs).
        assert left == [("owner", 1000), ("reviewer", 880), ("owner", None)]
        budgets = [c.spec.request.max_budget_usd for c in kit.runner.calls[:2]]
        assert budgets == [50.0, 49.99]


async def test_a_turn_stopped_for_the_budget_asks_the_humans_at_once(tmp_path: Path) -> None:
    policy = GroupPolicy(
        name="g", approvers=frozenset({"boss"}), thresholds=Thresholds(max_tokens=1000)
    )
    script: Script = {
        "owner": [fail(BUDGET, REASON, input_tokens=1000, output_tokens=200), "DONE\nv2", "DONE"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        task = await kit.task()
        assert task.status == "waiting_human" and kit.roles() == ["owner"]  # no retry
        assert task.tokens == 1200  # what the turn spent is kept
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "ceiling"
        assert f"owner turn 1 failed (budget): {REASON}" in esc.reason
        assert any(REASON in text for text in kit.platform.texts())
        await kit.click("approve", str(esc.id))
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert (await kit.store.task_extras(1))["grants"] == 1
        # The grant doubled the ceiling: 2,000 less the 1,200 spent.
        assert kit.runner.calls[1].spec.tokens_left == 800


class SpendingRunner(ScriptedRunner):
    """Reports 300 + 50 tokens spent before each scripted reply (as the credential proxy's
    usage goes ahead of a run's events)."""

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        yield RunEvent(kind="usage", input_tokens=300, output_tokens=50, cost_usd=0.25)
        async for event in super().run(spec):
            yield event


async def test_an_interrupted_turn_keeps_the_usage_it_spent(tmp_path: Path) -> None:
    runner = SpendingRunner({"owner": [Reply(hang=True, progress=("reading the code",))]})
    async with engine_kit(tmp_path, runner=runner) as kit:
        await kit.say("@tribunal refactor everything")
        await kit.runner.wait_calls(1)
        await kit.platform.wait_for(lambda: bool(kit.platform.progress()))
        await kit.say("<@U0TRIBUNAL> stop")  # the opener may stop it
        await kit.settle()
        task = await kit.task()
        [turn] = await kit.store.turns(1)
        assert task.status == "closed" and turn.status == "interrupted"
        assert (task.tokens, task.cost_usd) == (350, 0.25)
        assert await kit.store.usage_totals(1) == (300, 50, 0.25)


REMARK = "hmm, why is this so expensive? let me look"


async def test_a_remark_at_a_cost_ceiling_grants_nothing_and_the_task_keeps_waiting(
    tmp_path: Path,
) -> None:
    """Issue 24, item 10: an approver's remark at a cost ceiling ran four more turns. Only an
    explicit approval grants another budget; the remark is kept on the task for its next prompt."""
    policy = GroupPolicy(
        name="g", approvers=frozenset({"boss"}), thresholds=Thresholds(max_cost_usd=0.4)
    )
    script: Script = {
        "owner": ["DONE\nv1", "DONE\nv2", "DONE\nwrapped"],
        "reviewer": ["CHANGES_REQUESTED\n- more", "APPROVED"],
    }
    async with engine_kit(tmp_path, runner=SpendingRunner(script), policy=policy) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "ceiling" and "the limit is $0.40" in esc.reason
        assert "only Approve grants more" in kit.platform.texts()[-1]
        await kit.say(REMARK, user="boss", mention=False)
        await kit.say(f"@tribunal {REMARK}", user="boss")  # addressed to Tribunal: the same
        await kit.settle()
        task = await kit.task()
        assert task.status == "waiting_human" and kit.roles() == ["owner", "reviewer"]
        assert (await kit.store.task_extras(1))["grants"] == 0
        assert await kit.store.open_escalation(1) == esc  # still open, unanswered
        assert [m.text for m in await kit.store.messages(1)] == [REMARK, REMARK]
        noted = (
            "boss: noted on task #1; it still waits at its ceiling. Approve (the button, or "
            "`approve`) grants another budget of the same size; Reject (or `reject`) closes it."
        )
        assert kit.platform.texts()[-2:] == [noted, noted]
        await kit.click("approve", str(esc.id))
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert (await kit.store.task_extras(1))["grants"] == 1
        assert kit.roles() == ["owner", "reviewer", "owner", "reviewer", "owner"]
        assert REMARK in kit.runner.calls[2].prompt  # the note reached the owner
