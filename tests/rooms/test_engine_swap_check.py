"""The swap check on by default, through the real engine and store with scripted arbiters
(DESIGN §5): a ruling between the sides is read twice with the positions swapped; agreeing
readings stand, disagreeing ones follow the tie rule, an unreadable reading never proceeds; its
cost is in `status` and in the task's cost and turns (what the ceilings count); a group can turn
it off; the length check says in the record when a side was cut."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from rooms.base.model import GroupPolicy, Thresholds
from rooms.judge.positions import SIDE_BUDGET
from tests.fakes.engine_kit import engine_kit
from tests.fakes.rulings import ruling_reply
from tests.fakes.runner import Reply, say

FINDING = "CHANGES_REQUESTED\n- the parser drops the last line of the file"
# No swap_check given: the default is what is tested.
POLICY = GroupPolicy(
    name="g",
    approvers=frozenset({"boss"}),
    thresholds=Thresholds(repeated_findings_rounds=1, round_cap=20),
)


def ruling(verdict: str, cost: float = 0.01) -> Reply:
    fields: dict[str, Any] = {}
    if verdict == "REVISE":
        fields["conditions"] = ["keep the last line"]
    if verdict == "RESET":
        fields["new_direction"] = "parse with the csv module"
    reply = ruling_reply(verdict, **fields)
    reply.cost_usd = cost
    return reply


def stuck(arbiter: list[Reply | str], *, owner: list[str] | None = None, **kw: Any) -> Any:
    """A pair that deadlocks after two rounds (the same finding twice), then what follows."""
    script: dict[str, list[Any]] = {
        "owner": ["DONE\nparser written", "DONE\nkept the parser", *(owner or [])],
        "reviewer": [FINDING, FINDING, *kw.pop("reviewer", [])],
        "arbiter": arbiter,
    }
    return script


def seats(prompt: str) -> str:
    found = re.search(r"PROCEED sides with Position ([AB])", prompt)
    assert found is not None
    return found.group(1)


async def test_the_default_reads_a_proceed_twice_and_agreeing_readings_stand(
    tmp_path: Path,
) -> None:
    assert GroupPolicy(name="x").swap_check  # on unless a group turns it off
    script = stuck(
        [ruling("PROCEED", 0.25), ruling("PROCEED", 0.5)],
        owner=["DONE\nwrapped"],
        reviewer=["APPROVED"],
    )
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say("@tribunal write a config parser")
        await kit.settle()
        arbiters = kit.runner.calls_for("arbiter")
        assert len(arbiters) == 2
        assert seats(arbiters[0].prompt) != seats(arbiters[1].prompt)  # the order was swapped
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.verdict == "PROCEED"
        assert verdict.fairness is not None
        assert verdict.fairness["swap"] == "swap check: both orders ruled PROCEED"
        record = Path(verdict.record_path or "").read_text()
        assert "swap check: both orders ruled PROCEED." in record
        assert "Length check: neither side was cut" in record
        task = await kit.task()
        assert task.status == "closed"
        # Both readings count: 2 owner + 2 reviewer + 2 arbiter + reviewer + owner wrap-up.
        assert task.turns == 8
        assert task.cost_usd == sum(c for c in (await kit.store.turn_costs(1)).values())
        assert task.cost_usd >= 0.75


async def test_status_shows_the_swap_checks_cost(tmp_path: Path) -> None:
    gate_script = stuck(
        [ruling("REVISE", 0.25), ruling("REVISE", 0.5)],
        owner=["DONE\nkept the last line"],
        reviewer=["NEEDS_CONTEXT\nwhich file format?"],
    )
    policy = replace(POLICY, thresholds=replace(POLICY.thresholds, max_arbitrations=1))
    async with engine_kit(tmp_path, gate_script, policy=policy) as kit:
        await kit.say("@tribunal write a config parser")
        await kit.settle()
        await kit.say("@tribunal status")
        await kit.settle()
        status = kit.platform.texts()[-1]
        # The first reading (the one asked again) is the check's extra cost.
        assert "Swap check: on · 1 extra reading · $0.25" in status, status


async def test_readings_that_disagree_on_a_reset_take_the_tie_rule(tmp_path: Path) -> None:
    script = stuck(
        [ruling("RESET"), ruling("PROCEED")],
        owner=["DONE\nkept the last line", "DONE\nwrapped"],
        reviewer=["APPROVED"],
    )
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say("@tribunal write a config parser")
        await kit.settle()
        assert len(kit.runner.calls_for("arbiter")) == 2
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.verdict == "REVISE"  # reversible: the cautious side
        assert "tie rule: reversible → REVISE" in verdict.ruling.reasons


async def test_a_second_reading_that_cannot_be_read_never_proceeds(tmp_path: Path) -> None:
    script = stuck([ruling("PROCEED"), say("I think both have a point, hard to say.")])
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say("@tribunal write a config parser")
        await kit.settle()
        assert len(kit.runner.calls_for("arbiter")) == 2
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.verdict == "ESCALATE" and not verdict.ruling.readable
        assert (await kit.task()).status == "waiting_human"
        assert kit.roles()[-1] == "arbiter"  # the reviewer was not sent on by the first PROCEED


async def test_a_first_reading_that_cannot_be_read_is_not_read_again(tmp_path: Path) -> None:
    script = stuck([say("no idea"), ruling("PROCEED")])
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say("@tribunal write a config parser")
        await kit.settle()
        assert len(kit.runner.calls_for("arbiter")) == 1
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.verdict == "ESCALATE"
        assert (await kit.task()).status == "waiting_human"


async def test_a_group_can_turn_it_off(tmp_path: Path) -> None:
    script = stuck([ruling("PROCEED"), ruling("REVISE")], reviewer=["NEEDS_CONTEXT\nwhich format?"])
    one = replace(POLICY.thresholds, max_arbitrations=1)
    policy = replace(POLICY, swap_check=False, thresholds=one)
    async with engine_kit(tmp_path, script, policy=policy) as kit:
        await kit.say("@tribunal write a config parser")
        await kit.settle()
        assert len(kit.runner.calls_for("arbiter")) == 1
        [verdict] = await kit.store.verdicts(1)
        assert verdict.ruling.verdict == "PROCEED"
        record = Path(verdict.record_path or "").read_text()
        assert "Swap check: off for this group" in record
        await kit.say("@tribunal status")
        await kit.settle()
        assert "Swap check: off for this group" in kit.platform.texts()[-1]


async def test_the_record_says_which_side_was_cut(tmp_path: Path) -> None:
    long_owner = "DONE\n" + "I kept the parser as it is because " * 400
    script = {
        "owner": ["DONE\nparser written", long_owner, "DONE\nwrapped"],
        "reviewer": [FINDING, FINDING, "APPROVED"],
        "arbiter": [ruling("PROCEED"), ruling("PROCEED")],
    }
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say("@tribunal write a config parser")
        await kit.settle()
        [verdict] = await kit.store.verdicts(1)
        assert verdict.fairness is not None
        said = len(long_owner.split("\n", 1)[1].strip())
        assert verdict.fairness["cut"] == {"owner": said}
        record = Path(verdict.record_path or "").read_text()
        assert f"the owner's position was cut from {said:,} to {SIDE_BUDGET:,} characters" in (
            record
        )
        positions = kit.runner.calls_for("arbiter")[0].prompt.split("## The positions")[1]
        assert f"{said - SIDE_BUDGET} more characters cut" in positions
