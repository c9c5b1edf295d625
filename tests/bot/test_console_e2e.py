"""The core issue's end-to-end run: `tribunal chat` with the real Claude Code binary, through the
real wiring (settings → store → engine → LocalBackend → `python -m runners claude`), against the
scripted fake Messages API on 127.0.0.1, in a temp git workspace.

task → owner edits calc.py (a real Bash tool call) → reviewer asks for changes → the owner
pushes back, the reviewer repeats itself: the pair stalls → a detector fires → the arbiter rules
REVISE (structured output) → the owner fixes calc.py → the reviewer approves → the owner wraps
up → closed. Afterwards the store holds every turn, the firing and the ruling.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.bot.test_chat_cli import TRIBUNAL, _env
from tests.fakes.messages_api import (
    FakeMessagesAPI,
    prompt_contains,
    structured,
    system_contains,
    text,
    tool_use,
)
from tests.fakes.rulings import ruling_object
from tests.fakes.turn_objects import owner_says, reviewer_says

OWNER = system_contains("You are the owner")
REVIEWER = system_contains("You are the reviewer")
ARBITER = system_contains("You are the arbiter")
CONDITION = "RAISE-VALUEERROR: div() must raise ValueError when b == 0"
FINDING = "CHANGES_REQUESTED\n- calc.py: div() returns None for b == 0; it must raise ValueError"


def _bash(command: str) -> object:
    return tool_use("Bash", {"command": command, "description": "edit calc.py"})


def _git_workspace(path: Path) -> Path:
    path.mkdir()
    (path / "calc.py").write_text("def div(a, b):\n    return a / b\n")
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", "start"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True)
    return path


@pytest.mark.claude
def test_deadlock_ruled_revise_then_approved(tmp_path: Path) -> None:
    workspace = _git_workspace(tmp_path / "ws")
    guard = "printf 'def div(a, b):\\n    return a / b if b else None\\n' > calc.py"
    fix = (
        "printf 'def div(a, b):\\n    if b == 0:\\n"
        '        raise ValueError("b must not be 0")\\n    return a / b\\n\' > calc.py'
    )
    ruling = ruling_object(
        "REVISE",
        reasons="The reviewer is right: the task asks for safety, a silent None hides bugs.",
        conditions=[CONDITION],
        dissent="Returning None is a valid convention in some codebases.",
    )
    with FakeMessagesAPI(default=text("DONE\nnothing to add")) as fake:
        # Rules are tried in the order added; the first with replies left answers.
        fake.script(
            OWNER & prompt_contains("Your turn: wrap up"), [owner_says("DONE\nWrapped up.")]
        )
        fake.script(
            OWNER & prompt_contains("RAISE-VALUEERROR"),
            [_bash(fix), owner_says("DONE\nFIXED-PER-RULING: div() raises ValueError for b == 0")],
        )
        fake.script(OWNER, [_bash(guard), owner_says("DONE\nguarded div() against b == 0")])
        fake.script(
            OWNER,
            [owner_says("DONE\nReturning None for b == 0 is what callers expect; no change.")],
            repeat_last=True,
        )
        fake.script(
            REVIEWER & prompt_contains("FIXED-PER-RULING"), [reviewer_says("APPROVED\ngood")]
        )
        fake.script(REVIEWER, [reviewer_says(FINDING)], repeat_last=True)
        fake.script(ARBITER, [structured(ruling)] * 2)  # the swap check's two readings agree

        env = _env(
            tmp_path,
            ANTHROPIC_BASE_URL=fake.url,
            ANTHROPIC_API_KEY="sk-ant-e2e",
            TRIBUNAL_CONSOLE__WORKSPACE=str(workspace),
        )
        done = subprocess.run(
            [str(TRIBUNAL), "chat"],
            input="make div() in calc.py safe when b is zero\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
    out = done.stdout
    assert done.returncode == 0, done.stderr + out
    assert "Traceback" not in done.stderr

    # The work itself: the owner's real tool calls changed the task's worktree, and the engine
    # committed the fix on the task's branch; the checkout itself is left as it was.
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=workspace, check=True, capture_output=True, text=True
        ).stdout

    [branch] = git("branch", "--list", "tribunal/1-*", "--format=%(refname:short)").split()
    assert 'raise ValueError("b must not be 0")' in git("show", f"{branch}:calc.py")
    assert "raise" not in (workspace / "calc.py").read_text()
    assert f"`{branch}`" in out

    # The room showed it, in order.
    order = ["[owner] DONE", "[reviewer] CHANGES_REQUESTED", "[arbiter]", "FIXED-PER-RULING"]
    positions = [out.find(part) for part in order]
    assert all(p >= 0 for p in positions), out
    assert positions == sorted(positions), out
    assert "[reviewer] APPROVED" in out and "done and closed" in out, out

    # The store is the source of truth: every turn, the firing and the ruling.
    db = sqlite3.connect(tmp_path / "data" / "tribunal.db")
    (status,) = db.execute("SELECT status FROM tasks").fetchone()
    assert status == "closed"
    turns = db.execute("SELECT role, status, marker, output FROM turns ORDER BY seq").fetchall()
    roles = [t[0] for t in turns]
    assert all(t[1] == "done" for t in turns), turns
    arbiter_at = roles.index("arbiter")
    assert roles[:arbiter_at] == ["owner", "reviewer"] * (arbiter_at // 2)
    assert roles[arbiter_at:] == ["arbiter", "arbiter", "owner", "reviewer", "owner"]
    assert turns[-2][2] == "APPROVED"
    assert "FIXED-PER-RULING" in turns[arbiter_at + 2][3]
    firings = db.execute("SELECT detector, reason FROM firings").fetchall()
    assert firings and firings[0][0] in {"repeated_findings", "stagnation"}, firings
    assert firings[0][1] in out  # each firing is shown in the room with its reason
    verdicts = db.execute("SELECT verdict FROM verdicts").fetchall()
    assert verdicts == [("REVISE",)]
    # The arbiter ran read-only with the ruling schema; the owner had its write tools.
    arbiter_calls = [c for c in fake.calls if "You are the arbiter" in c.system]
    assert arbiter_calls and "StructuredOutput" in arbiter_calls[0].tool_names
    assert "Write" not in arbiter_calls[0].tool_names
    owner_calls = [c for c in fake.calls if "You are the owner" in c.system]
    assert "Write" in owner_calls[0].tool_names
    usage = db.execute("SELECT count(*), sum(input_tokens) FROM usage").fetchone()
    assert usage[0] == len(turns) and usage[1] > 0
    print(json.dumps({"turns": roles, "firing": firings[0][0]}))
