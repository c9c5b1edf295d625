"""Resolve through the real engine and store with scripted runners: tests decide 2–1, tests
that do not discriminate ask the people with every position's dissent, tests that cannot run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rooms.machine import CLOSED, WAITING_HUMAN
from rooms.model import GroupPolicy
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Reply, say
from tests.rooms.resolve import scripts

T1 = scripts.test("T1", A="FAIL", B="PASS")
T2 = scripts.test("T2", A="PASS", B="FAIL")
T3 = scripts.test("T3", A="PASS", B="FAIL")
QUESTION = "@tribunal resolve Does parse() drop the trailing newline?"


def obj(data: dict[str, Any]) -> Reply:
    return say(json.dumps(data))


async def test_tests_decide_2_to_1(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = {
        "positions": [obj(scripts.TWO)],
        "designer": [obj(scripts.design(T1, T2, T3))],
        "executor": [say("", structured=scripts.results(T1="PASS", T2="PASS", T3="PASS"))],
    }
    policy = GroupPolicy(name="g", workspace=str(workspace), approvers=frozenset({"boss"}))
    async with engine_kit(tmp_path, script, policy=policy) as kit:
        await kit.say(QUESTION)
        await kit.settle()
        task = await kit.task()
        assert (task.protocol, task.status) == ("resolve", CLOSED)
        assert kit.roles() == ["positions", "designer", "executor"]
        executor = kit.runner.calls[-1].spec
        assert executor.workspace == str(workspace)  # the tests run against the workspace
        assert executor.request.read_only and executor.request.output_schema is not None
        assert "`python -m pytest -q /tmp/t1.py`" in executor.request.prompt
        assert executor.request.system_prompt.startswith("# You run the tests of a dispute")
        texts = kit.platform.texts()
        resolved = next(t for t in texts if t.startswith("🧪 **Resolved: A**"))
        assert "A wins 2 of 3 discriminating tests" in resolved and "Dissent kept: B" in resolved
        record = (tmp_path / "data" / "decisions" / f"task-{task.id}-resolve.md").read_text()
        assert "| T1 | FAIL | PASS ✓ | PASS | yes |" in record


async def test_tests_that_do_not_discriminate_escalate_with_every_positions_dissent(
    tmp_path: Path,
) -> None:
    same = scripts.test("T1", A="PASS", B="PASS")
    script = {
        "positions": [obj(scripts.TWO), obj(scripts.TWO)],
        "designer": [
            obj(scripts.design(same, talk="state what B expects on CRLF")),
            obj(scripts.design(same)),
        ],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say(QUESTION)
        await kit.settle()
        task = await kit.task()
        assert task.status == WAITING_HUMAN
        assert kit.roles() == ["positions", "designer", "positions", "designer"]  # 2 rounds of talk
        esc = await kit.store.open_escalation(task.id)
        assert esc is not None
        assert esc.options == (
            "A: parse() drops the trailing newline",
            "B: parse() keeps it",
            "Stop: leave it undecided",
        )
        texts = kit.platform.texts()
        summary = next(t for t in texts if t.startswith("🧪 **Not resolved**"))
        assert "- **A:** parse() drops the trailing newline (why A)" in summary
        assert "- **B:** parse() keeps it (why B)" in summary
        await kit.click("approve", str(esc.id))
        await kit.settle()
        assert (await kit.task()).status == CLOSED


async def test_when_no_test_can_run_the_people_decide(tmp_path: Path) -> None:
    script = {
        "positions": [obj(scripts.TWO)],
        "designer": [obj(scripts.design(T1, T2))],
        "executor": [obj(scripts.results(T1="ERROR", T2="ERROR"))],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say(QUESTION)
        await kit.settle()
        assert (await kit.task()).status == WAITING_HUMAN
        assert any("no test could run" in t for t in kit.platform.texts())
