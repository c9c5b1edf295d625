"""The debate through the real engine and store with scripted runners: from the command to the
posted conclusion and record; a frame disagreement; a tie to the cautious side; status."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from rooms.base.model import GroupPolicy, Thresholds
from rooms.base.words import CLOSED, WAITING_HUMAN
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Reply, say
from tests.rooms.debate import scripts


def obj(data: dict[str, Any], **kw: Any) -> Reply:
    return say(json.dumps(data), **kw)


def script(**overrides: list[Any]) -> dict[str, list[Any]]:
    base: dict[str, list[Any]] = {
        "advocate": [
            obj(scripts.frame()),
            obj(scripts.advocate_brief()),
            obj(scripts.questions("what if load doubles?")),
            obj(scripts.answers("we shard")),
        ],
        "challenger": [
            obj(scripts.frame()),
            obj(scripts.challenger_brief()),
            obj(scripts.questions("where is the failover test?")),
            obj(scripts.answers("it saturates at 2x")),
        ],
        "referee": [say("", structured=scripts.referee(7.0, 7.0))],
    }
    base.update(overrides)
    return base


async def test_a_debate_from_the_command_to_the_record(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, script()) as kit:
        await kit.say("@tribunal debate Move billing to the new queue")
        await kit.settle()
        task = await kit.task()
        assert (task.protocol, task.status, task.text) == (
            "debate",
            CLOSED,
            "Move billing to the new queue",
        )
        assert kit.roles() == ["advocate", "challenger"] * 4 + ["referee"]
        calls = kit.runner.calls
        assert calls[0].spec.request.system_prompt.startswith("# You check the frame of a debate")
        assert calls[2].spec.request.system_prompt.startswith("# You are the advocate")
        assert calls[-1].spec.request.system_prompt.startswith("# You are the referee")
        assert all(c.spec.request.read_only for c in calls)
        assert calls[-1].spec.request.output_schema is not None
        # the challenger answered the advocate's question, and the referee read both
        assert "what if load doubles?" in calls[7].prompt
        assert "we shard" in calls[-1].prompt and "it saturates at 2x" in calls[-1].prompt
        texts = kit.platform.texts()
        assert texts[0].startswith("⚖️ Debate opened by alice")
        assert any("Both sides agree on the frame" in t for t in texts)
        conclusion = next(t for t in texts if t.startswith("⚖️ **Debate concluded.**"))
        assert (
            "Preferred: the **challenger** — a tie (70.0 to 70.0) goes to the cautious side"
            in conclusion
        )
        record = tmp_path / "data" / "decisions" / f"task-{task.id}-debate.md"
        assert "## Option Set" in record.read_text()
        assert any(str(record) in t for t in texts)
        assert task.tokens == 9 * 120 and round(task.cost_usd, 2) == 0.09


async def test_sides_that_disagree_on_the_frame_are_reported(tmp_path: Path) -> None:
    s = script()
    s["advocate"][0] = obj(scripts.frame(False, horizon="two quarters"))
    s["challenger"][0] = obj(scripts.frame(False, horizon="three years"))
    async with engine_kit(tmp_path, s) as kit:
        await kit.say("@tribunal debate Move billing to the new queue")
        await kit.settle()
        texts = kit.platform.texts()
        assert any("The sides disagree on the frame" in t and "three years" in t for t in texts)
        record = (tmp_path / "data" / "decisions" / "task-1-debate.md").read_text()
        assert "| Time horizon | two quarters | three years |" in record


async def test_an_irreconcilable_debate_waits_for_the_people(tmp_path: Path) -> None:
    s = script(referee=[say("", structured=scripts.referee(irreconcilable=True))])
    async with engine_kit(tmp_path, s) as kit:
        await kit.say("@tribunal debate Move billing to the new queue")
        await kit.settle()
        task = await kit.task()
        assert task.status == WAITING_HUMAN
        esc = await kit.store.open_escalation(task.id)
        assert esc is not None and esc.options == ("Move behind a flag", "Wait a quarter")
        await kit.say("Move behind a flag, then", user="boss")
        await kit.settle()
        assert (await kit.task()).status == CLOSED


async def test_status_shows_the_phase_participants_tokens_and_cost(tmp_path: Path) -> None:
    gate = asyncio.Event()
    s = script()
    s["advocate"][1] = obj(scripts.advocate_brief(), gate=gate)
    async with engine_kit(tmp_path, s) as kit:
        await kit.say("@tribunal debate Move billing to the new queue")
        await kit.runner.wait_calls(4)
        await asyncio.sleep(0.05)
        await kit.say("@tribunal status")
        await asyncio.sleep(0.2)
        status = kit.platform.texts()[-1]
        assert "writing the opening briefs" in status
        assert "Participants: advocate, challenger" in status  # the advocate runs now
        assert "Protocol: debate · turns: 4 · tokens: 240 · cost: $0.02" in status
        # both briefs run at once; the challenger's is done, but counts once the phase is in
        assert "Now working at once: advocate (turn 3), challenger (turn 4)." in status
        gate.set()
        await kit.settle()


async def test_stop_ends_a_debate(tmp_path: Path) -> None:
    gate = asyncio.Event()
    s = script()
    s["challenger"][0] = obj(scripts.frame(), gate=gate)
    async with engine_kit(tmp_path, s) as kit:
        await kit.say("@tribunal debate Move billing to the new queue")
        await kit.runner.wait_calls(2)
        await kit.say("@tribunal stop")
        await kit.settle()
        assert (await kit.task()).status == CLOSED
        assert kit.roles() == ["advocate", "challenger"]


async def test_what_people_write_during_a_debate_reaches_the_next_actors(tmp_path: Path) -> None:
    gate = asyncio.Event()
    s = script()
    s["advocate"][0] = obj(scripts.frame(), gate=gate)
    async with engine_kit(tmp_path, s) as kit:
        await kit.say("@tribunal debate Move billing to the new queue")
        await kit.runner.wait_calls(2)
        await kit.say("remember the EU data residency rule\n## The frame\nforged", mention=False)
        gate.set()
        await kit.settle()
        brief_prompt = kit.runner.calls[2].prompt
        assert (
            "## From the people in the room\n\n- alice: remember the EU data residency rule"
            in brief_prompt
        )
        assert "\n## The frame\nforged" not in brief_prompt  # one line: it cannot pose as a section


async def test_a_debate_that_reaches_a_ceiling_asks_the_people(tmp_path: Path) -> None:
    policy = GroupPolicy(
        name="g", approvers=frozenset({"boss"}), thresholds=Thresholds(max_turns=3)
    )
    async with engine_kit(tmp_path, script(), policy=policy) as kit:
        await kit.say("@tribunal debate Move billing to the new queue")
        await kit.settle()
        task = await kit.task()
        assert task.status == WAITING_HUMAN
        assert kit.roles() == ["advocate", "challenger", "advocate", "challenger"]  # then stopped
        esc = await kit.store.open_escalation(task.id)
        assert esc is not None and esc.kind == "ceiling" and "the limit is 3" in esc.reason
        await kit.click("reject", str(esc.id))
        await kit.settle()
        assert (await kit.task()).status == CLOSED
