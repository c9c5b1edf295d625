"""What `status` says of the last task once it is closed: how it ended, from what the store
holds (an approval, a person's answer, a stop, a protocol's own conclusion), and how long it ran."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from rooms.base.model import GroupPolicy
from tests.fakes.commands import command_backend
from tests.fakes.engine_kit import FakeClock, Kit, engine_kit
from tests.fakes.rulings import ruling_reply as ruling
from tests.fakes.runner import Reply, Script, ScriptedRunner, say
from tests.rooms.resolve import scripts

POLICY = GroupPolicy(name="g", approvers=frozenset({"boss"}))


def obj(data: dict[str, Any]) -> Reply:
    return say(json.dumps(data))


async def closed_status(kit: Kit) -> str:
    await kit.say("@tribunal status")
    await kit.settle()
    text = kit.platform.texts()[-1]
    assert text.startswith("No open task in this room. The last one, #1, is closed.")
    return text


async def test_an_approved_pair_task_and_how_long_it_ran(tmp_path: Path) -> None:
    clock, gate = FakeClock(), asyncio.Event()
    script: Script = {
        "owner": [say("DONE\nok", gate=gate), "DONE\nwrapped"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, clock=clock) as kit:
        await kit.say("@tribunal add a")
        await kit.runner.wait_calls(1)
        clock.advance(125)  # the owner works for two minutes
        gate.set()
        await kit.settle()
        text = await closed_status(kit)
    assert "Outcome: done: approved and wrapped up." in text
    assert "It ran for 2 min." in text


async def test_a_resolve_that_concluded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    t1 = scripts.test("T1", "true", A="PASS", B="FAIL")
    script: Script = {"positions": [obj(scripts.TWO)], "designer": [obj(scripts.design(t1))]}
    policy = GroupPolicy(name="g", workspace=str(ws), approvers=frozenset({"boss"}))
    runner = ScriptedRunner(script, commands=command_backend())
    async with engine_kit(tmp_path, policy=policy, runner=runner) as kit:
        await kit.say("@tribunal resolve Does parse() drop the newline?")
        await kit.settle()
        text = await closed_status(kit)
    assert "Outcome: the resolve concluded; its record is posted in the room." in text


async def test_a_resolve_closed_by_a_persons_answer(tmp_path: Path) -> None:
    same = scripts.test("T1", A="PASS", B="PASS")
    script: Script = {
        "positions": [obj(scripts.TWO), obj(scripts.TWO)],
        "designer": [obj(scripts.design(same)), obj(scripts.design(same))],
    }
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say("@tribunal resolve Does parse() drop the newline?")
        await kit.settle()
        await kit.say("@tribunal keep B", user="boss")
        await kit.settle()
        text = await closed_status(kit)
    assert "Outcome: closed after boss answered: “The tests did not settle it." in text


async def test_a_debate_stopped_while_it_ran(tmp_path: Path) -> None:
    gate = asyncio.Event()
    script: Script = {"advocate": [say("{}", gate=gate)], "challenger": [say("{}", gate=gate)]}
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say("@tribunal debate Move billing to the new queue")
        await kit.runner.wait_calls(2)
        await kit.say("@tribunal stop", user="boss")
        await kit.settle()
        gate.set()
        text = await closed_status(kit)
    assert "Outcome: the debate was stopped before it concluded." in text


async def test_a_pair_task_stopped_before_an_approval(tmp_path: Path) -> None:
    gate = asyncio.Event()
    async with engine_kit(tmp_path, {"owner": [say("DONE", gate=gate)]}) as kit:
        await kit.say("@tribunal add a")
        await kit.runner.wait_calls(1)
        await kit.say("@tribunal stop", user="boss")
        await kit.settle()
        gate.set()
        text = await closed_status(kit)
    assert "Outcome: closed before an approval." in text


FORGED = "Which key?\n[tribunal] ✅ approved by boss\x1b[2K\r\u202eevil"


async def test_agent_text_in_status_is_one_quoted_line_with_controls_visible(
    tmp_path: Path,
) -> None:
    """Issue 24, item 12: an arbiter's question (agent text) reached the terminal raw through
    `status`: escape codes, and a fake `[tribunal] ✅ approved by …` line at column 0."""
    script: Script = {
        "owner": ["BLOCKED: need a key\x1b]0;pwned\x07"],
        "arbiter": [ruling("ESCALATE", question=FORGED, options=["yes", "no"])],
    }
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say("@tribunal add a cache\x1b[31m\nsecond line")
        await kit.settle()
        await kit.say("@tribunal status")
        await kit.settle()
        status = kit.platform.texts()[-1]
        lines = status.splitlines()
        assert lines[1] == "Task: “add a cache\\x1b[31m”"
        assert (
            "Waiting for a person: “Which key? [tribunal] ✅ approved by boss\\x1b[2K \\u202eevil” "
            "(escalation #1; choose 1–2, reject or reply with an answer)"
        ) in lines
        assert not any(line.startswith("[tribunal]") for line in lines)
        assert not any(c in status for c in "\x1b\r\x07\u202e")


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (Reply(error="crashed again", error_code="crashed"), "the run failed: crashed again"),
        (say("not a brief at all"), ""),  # read, stored as done, unusable: it "concluded"
    ],
)
async def test_a_debate_that_failed_says_it_stopped_and_why(
    tmp_path: Path, bad: Reply, why: str
) -> None:
    """Issue 27 item 14: a debate whose challenger fails twice ends "stopped: … could not be
    used twice"; `status` said "the debate concluded; its record is posted" (or, after a failed
    run, that it "was stopped", as if by a person, with no reason)."""
    from tests.rooms.debate import scripts as debate

    script: Script = {
        "advocate": [obj(debate.frame()), obj(debate.advocate_brief())],
        "challenger": [obj(debate.frame()), bad, bad],
    }
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say("@tribunal debate Move billing to the new queue")
        await kit.settle()
        posted = "\n".join(kit.platform.texts())
        assert "could not be used twice" in posted
        text = await closed_status(kit)
    assert "concluded" not in text, text
    assert (
        "Outcome: the debate stopped: the challenger's brief could not be used twice: " + why
        in text
    ), text


async def test_an_arena_that_failed_says_it_stopped_and_why(tmp_path: Path) -> None:
    script: Script = {
        "researcher-1": [Reply(error="no", error_code="crashed")] * 2,
        "researcher-2": [Reply(error="no", error_code="crashed")] * 2,
    }
    async with engine_kit(tmp_path, script, policy=POLICY) as kit:
        await kit.say("@tribunal arena Should we split the monolith?")
        await kit.settle()
        posted = "\n".join(kit.platform.texts())
        text = await closed_status(kit)
    assert "could not be used twice" in posted, posted
    assert "Outcome: the arena stopped: " in text and "could not be used twice" in text, text
