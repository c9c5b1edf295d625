"""What people and agents read: a ruling's reasons once, a ruling in later prompts as words (not
its raw JSON), and a note when the task given to the agents was cut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rooms.pair.prompting import HUMAN_TEXT_LIMIT
from tests.fakes.engine_kit import engine_kit
from tests.fakes.rulings import ruling_object
from tests.fakes.runner import Script, say

BLOCKED = "BLOCKED\nI need the staging API key"


def ruling(verdict: str, **fields: Any) -> dict[str, Any]:
    return ruling_object(verdict, **{"reasons": "REASONS-ONCE: the key is a secret", **fields})


async def test_an_escalating_rulings_reasons_are_posted_once(tmp_path: Path) -> None:
    structured = ruling(
        "ESCALATE", question="May the owner use the production key?", options=["yes", "no"]
    )
    script: Script = {
        "owner": [BLOCKED],
        "arbiter": [say(json.dumps(structured), structured=structured)],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        assert (await kit.task()).status == "waiting_human"
        posted = "\n".join(kit.platform.texts())
        assert posted.count("REASONS-ONCE") == 1
        esc = await kit.store.open_escalation(1)
        assert esc is not None and "REASONS-ONCE" in esc.reason  # still stored with it


async def test_a_json_ruling_reaches_later_prompts_as_words(tmp_path: Path) -> None:
    structured = ruling("REVISE", conditions=["mock the API"])
    script: Script = {
        "owner": [BLOCKED, "DONE\nmocked", "DONE\nwrapped"],
        "arbiter": [say(json.dumps(structured), structured=structured)],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal add integration tests")
        await kit.settle()
        review = kit.runner.calls[3]
        assert review.role == "reviewer"
        assert '"verdict"' not in review.prompt and "{" not in review.prompt
        assert "### Turn 2: arbiter — REVISE\n> VERDICT: REVISE\n> REASONS-ONCE" in review.prompt
        assert "> Conditions:\n> - mock the API" in review.prompt


async def test_the_person_is_told_when_the_task_given_to_the_agents_was_cut(
    tmp_path: Path,
) -> None:
    script: Script = {"owner": ["DONE", "DONE"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal " + "analyse this log: " + "x" * HUMAN_TEXT_LIMIT)
        await kit.settle()
        ack = kit.platform.texts()[0]
        assert ack.startswith("📋 Task opened by alice.")
        assert f"the agents are given its first {HUMAN_TEXT_LIMIT:,}" in ack
    (tmp_path / "short").mkdir()
    script = {"owner": ["DONE", "DONE"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path / "short", script) as kit:
        await kit.say("@tribunal fix it")
        await kit.settle()
        assert "the agents are given" not in kit.platform.texts()[0]


async def test_a_console_group_is_told_to_type_not_to_mention(tmp_path: Path) -> None:
    from rooms.base.model import GroupPolicy

    policy = GroupPolicy(name="console", approvers=frozenset({"boss"}), address="type")
    script: Script = {"owner": ["DONE", "DONE"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, script, policy=policy) as kit:
        await kit.say("@tribunal")  # help
        await kit.say("@tribunal status")
        await kit.say("@tribunal fix it")
        await kit.settle()
        await kit.say("@tribunal status")
        await kit.settle()
        texts = kit.platform.texts()
    assert texts[0].startswith("Type a task to start one.")
    assert texts[1] == "No open task in this room. Type a task to start one."
    assert "type `status` to see where it is" in texts[2]
    assert texts[-1].endswith("Type a task to start one.")
    assert not any("ention" in t for t in texts), texts
