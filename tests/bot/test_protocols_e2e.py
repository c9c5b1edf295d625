"""One end-to-end run per deliberation protocol: `tribunal chat` with the real Claude Code binary,
through the real wiring (settings → store → engine → LocalBackend → `python -m runners claude`),
against the scripted fake Messages API on 127.0.0.1, from the chat command to the posted
conclusion, as the console e2e does for the pair."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.bot.test_chat_cli import TRIBUNAL, _env
from tests.bot.test_console_e2e import _git_workspace
from tests.fakes.messages_api import (
    FakeMessagesAPI,
    structured,
    system_contains,
    text,
)
from tests.rooms.arena import scripts as arena
from tests.rooms.debate import scripts as debate
from tests.rooms.resolve import scripts as resolve


def _chat(tmp_path: Path, fake: FakeMessagesAPI, workspace: Path, line: str) -> str:
    env = _env(
        tmp_path,
        ANTHROPIC_BASE_URL=fake.url,
        ANTHROPIC_API_KEY="sk-ant-e2e",
        TRIBUNAL_CONSOLE__WORKSPACE=str(workspace),
    )
    done = subprocess.run(
        [str(TRIBUNAL), "chat"],
        input=line + "\n/status\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    return done.stdout


def _tasks(tmp_path: Path) -> list[tuple[str, str, int, float]]:
    db = sqlite3.connect(tmp_path / "data" / "tribunal.db")
    return db.execute("SELECT protocol, status, tokens, cost_usd FROM tasks").fetchall()


@pytest.mark.claude
def test_resolve_end_to_end(tmp_path: Path) -> None:
    """The agents (positions, test design) are the real Claude Code against the fake API; the
    designed test is run by the engine itself (`python -m runners command` on the local
    backend): no model is asked what it did."""
    workspace = _git_workspace(tmp_path / "ws")
    command = "python3 -c 'import calc; assert calc.div(4, 2) == 2' && echo div-ok"
    t1 = resolve.test("T1", command, A="PASS", B="FAIL")
    with FakeMessagesAPI(default=text("nothing to add")) as fake:
        fake.script(
            system_contains("You state the positions of a dispute"), [structured(resolve.TWO)]
        )
        fake.script(
            system_contains("You design discriminating tests"), [structured(resolve.design(t1))]
        )
        out = _chat(tmp_path, fake, workspace, "/resolve does div(4, 2) return 2?")
    assert "🧪 **Resolved: A**" in out, out
    assert "A wins 1 of 1 discriminating tests" in out
    # the test really ran in the workspace, run by Tribunal: its exit status and output
    assert "- **T1** test_t1: **PASS** (exit 0)" in out and "div-ok" in out
    roles = ("You state the positions of a dispute", "You design discriminating tests")
    asked = [next((r for r in roles if r in c.system), "other") for c in fake.calls]
    assert asked.count(roles[0]) == 1 and asked.count(roles[1]) == 1, asked  # no executor agent
    ((protocol, status, tokens, cost),) = _tasks(tmp_path)
    assert (protocol, status) == ("resolve", "closed") and tokens > 0


@pytest.mark.claude
def test_debate_end_to_end(tmp_path: Path) -> None:
    workspace = _git_workspace(tmp_path / "ws")
    with FakeMessagesAPI(default=text("nothing to add")) as fake:
        fake.script(
            system_contains("You check the frame of a debate"), [structured(debate.frame())] * 2
        )
        adv, ch = system_contains("You are the advocate"), system_contains("You are the challenger")
        fake.script(
            adv,
            [
                structured(debate.advocate_brief()),
                structured(debate.questions("what if load doubles?")),
                structured(debate.answers("we shard")),
            ],
        )
        fake.script(
            ch,
            [
                structured(debate.challenger_brief()),
                structured(debate.questions("where is the failover test?")),
                structured(debate.answers("it saturates")),
            ],
        )
        fake.script(system_contains("You are the referee"), [structured(debate.referee(7.0, 7.0))])
        out = _chat(tmp_path, fake, workspace, "/debate Move billing to the new queue")
    assert "⚖️ **Debate concluded.**" in out, out
    assert "a tie (70.0 to 70.0) goes to the cautious side" in out
    assert "[advocate] **Opening brief (advocate)**" in out and "[challenger]" in out
    ((protocol, status, tokens, cost),) = _tasks(tmp_path)
    assert (protocol, status) == ("debate", "closed")
    record = tmp_path / "data" / "records" / "decisions" / "task-1-debate.md"
    assert f"Decision record: {record}" in out
    assert "## Option Set" in record.read_text()


@pytest.mark.claude
def test_arena_end_to_end(tmp_path: Path) -> None:
    workspace = _git_workspace(tmp_path / "ws")
    slugs = ("fleet-operator", "security-auditor", "skeptic")
    with FakeMessagesAPI(default=text("nothing to add")) as fake:
        fake.script(
            system_contains("You are the arena's moderator"),
            [structured(arena.panel(slugs, researchers=2))],
        )
        fake.script(
            system_contains("You are a researcher for an expert arena"),
            [text("calc.py has div()")] * 2,
        )
        expert = system_contains("You are an expert in an arena")
        fake.script(expert, [structured(arena.msg())] * 3 + [structured(arena.final())] * 3)
        fake.script(
            system_contains("You write the arena's synthesis"), [structured(arena.narrative())]
        )
        out = _chat(tmp_path, fake, workspace, "/arena Should div() raise on zero?")
    assert "🏟️ **Arena concluded.**" in out, out

    # The synthesis is saved in the task's worktree and committed on its branch by the engine;
    # the checkout itself is left as it was.
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=workspace, check=True, capture_output=True, text=True
        ).stdout

    [branch] = git("branch", "--list", "tribunal/1-*", "--format=%(refname:short)").split()
    (saved,) = git("ls-tree", "-r", "--name-only", branch, "docs/arena/").split()
    assert "## Trust Summary" in git("show", f"{branch}:{saved}")
    assert not (workspace / "docs").exists()
    assert f"`{branch}`" in out
    assert "Protocol: arena" not in out or "closed" in out
    ((protocol, status, tokens, cost),) = _tasks(tmp_path)
    assert (protocol, status) == ("arena", "closed") and cost > 0
