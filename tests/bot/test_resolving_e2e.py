"""The arbiter asks for tests before ruling, end to end: `tribunal chat` with the real Claude Code
binary (owner, arbiter, the resolve positions and test design) against the scripted fake Messages
API, the designed test run by the engine's command runner in the task's worktree, and the second
arbiter turn ruling with the result in its prompt."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.bot.test_console_e2e import _git_workspace
from tests.bot.test_protocols_e2e import _chat
from tests.fakes.messages_api import (
    FakeMessagesAPI,
    prompt_contains,
    structured,
    system_contains,
    text,
)
from tests.fakes.rulings import ruling_object as ruling
from tests.fakes.turn_objects import owner_says
from tests.rooms.resolve import scripts as resolve

OWNER = system_contains("You are the owner")
ARBITER = system_contains("You are the arbiter")
QUESTION = "Does calc.div(4, 2) return the float 2.0 or the int 2?"


@pytest.mark.claude
def test_the_arbiter_asks_for_tests_and_rules_with_their_result(tmp_path: Path) -> None:
    workspace = _git_workspace(tmp_path / "ws")
    command = "python3 -c 'import calc; assert isinstance(calc.div(4, 2), float)' && echo is-float"
    t1 = resolve.test("T1", command, A="PASS", B="FAIL")
    positions = resolve.positions(("A", "div(4, 2) returns 2.0"), ("B", "div(4, 2) returns 2"))
    asks = ruling("ESCALATE", reasons="they disagree on what div() returns", resolve=QUESTION)
    rules = ruling(
        "ESCALATE",
        reasons="the test shows div() returns a float; whether callers want an int is the "
        "people's call",
        question="Should div() return an int when the division is exact?",
        options=["Keep the float", "Return an int when exact"],
    )
    with FakeMessagesAPI(default=text("nothing to add")) as fake:
        fake.script(
            OWNER,
            [owner_says("BLOCKED: the reviewer says div(4, 2) is 2.0, I say it is 2; stuck.")],
        )
        fake.script(ARBITER & prompt_contains("## The tests you asked for"), [structured(rules)])
        fake.script(ARBITER, [structured(asks)])
        positions_run = system_contains("You state the positions of a dispute")
        fake.script(positions_run, [structured(positions)])
        fake.script(
            system_contains("You design discriminating tests"), [structured(resolve.design(t1))]
        )
        out = _chat(tmp_path, fake, workspace, "make div() in calc.py return what callers expect")
        arbiter_prompts = [
            "\n".join(c.user_texts()) for c in fake.calls if "You are the arbiter" in c.system
        ]
    order = [
        "⚖️ Before ruling, the arbiter asks for tests",
        "🧪 Positions",
        "🧪 Discriminating tests",
        "🧪 **Resolved: A**",
        "⚖️ The arbiter now rules with these results.",
        "⚖️ Ruling: ESCALATE",
        "Should div() return an int when the division is exact?",
    ]
    at = [out.find(part) for part in order]
    assert all(p >= 0 for p in at) and at == sorted(at), out
    assert "is-float" in out  # the engine ran the test in the worktree and shows its output
    # The second arbiter call had the result in hand; the first did not.
    with_result = [p for p in arbiter_prompts if "## The tests you asked for" in p]
    assert with_result and "> 🧪 **Resolved: A**" in with_result[-1]
    assert not any("## The tests you asked for" in p for p in arbiter_prompts[:1])
    db = sqlite3.connect(tmp_path / "data" / "tribunal.db")
    roles = [r for (r,) in db.execute("SELECT role FROM turns ORDER BY seq")]
    assert roles == [
        "owner",
        "arbiter",
        "resolve:positions",
        "resolve:designer",
        "resolve:executor",
        "arbiter",
    ]
    ((status, arbitrations),) = db.execute("SELECT status, arbitrations FROM tasks").fetchall()
    assert (status, arbitrations) == ("waiting_human", 1)
