"""Issue 8's end-to-end run: `tribunal chat` with the real Claude Code binary, the real wiring
(settings → store → engine → LocalBackend → `python -m runners claude`) and the scripted fake
Messages API on 127.0.0.1, in a temp git workspace.

A reworded stall: the reviewer raises one defect three times in new words (no finding ids, no
similar text), the owner changes nothing → `unchanged` fires at the second unchanged round → the
arbiter rules REVISE → while the owner fixes calc.py, a person types `/arbitrate <note>` → the
owner's turn finishes → the arbiter is summoned with the note and rules PROCEED → the reviewer
approves → the owner wraps up → closed. Both rulings are applied and the store says who asked.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.bot.test_chat_cli import TRIBUNAL, _env
from tests.bot.test_console_e2e import _bash, _git_workspace
from tests.fakes.messages_api import (
    FakeMessagesAPI,
    held,
    prompt_contains,
    structured,
    system_contains,
    text,
)
from tests.fakes.rulings import ruling_object
from tests.fakes.turn_objects import owner_says, reviewer_says

OWNER = system_contains("You are the owner")
REVIEWER = system_contains("You are the reviewer")
ARBITER = system_contains("You are the arbiter")
CONDITION = "RAISE-VALUEERROR: div() must raise ValueError when b == 0"
NOTE = "LOOK-AT-MESSAGE: does the ValueError say which argument was wrong?"
REWORDED = [
    "CHANGES_REQUESTED\n- calc.py: div() crashes on a zero divisor; it must raise ValueError",
    "CHANGES_REQUESTED\n- Passing b=0 still ends in ZeroDivisionError rather than the error asked",
    "CHANGES_REQUESTED\n- Nothing moved: dividing by nothing has to be reported as a bad value",
]


def _pending_summon(tmp_path: Path) -> str | None:
    """The task's stored summon (a person's `/arbitrate` not yet acted on), read from the store."""
    db = tmp_path / "data" / "tribunal.db"
    with contextlib.closing(sqlite3.connect(db)) as conn:
        row = conn.execute("SELECT summon FROM tasks").fetchone()
    return None if row is None else row[0]


def _ruling(verdict: str, **fields: object) -> dict[str, object]:
    return ruling_object(
        verdict, **{"reasons": f"{verdict}: see the evidence in calc.py", **fields}
    )


@pytest.mark.claude
def test_a_reworded_stall_then_a_persons_arbitrate_are_both_ruled_and_applied(
    tmp_path: Path,
) -> None:
    workspace = _git_workspace(tmp_path / "ws")
    fix = (
        "printf 'def div(a, b):\\n    if b == 0:\\n"
        '        raise ValueError("b must not be 0")\\n    return a / b\\n\' > calc.py'
    )
    with FakeMessagesAPI(default=text("DONE\nnothing to add")) as fake:
        fake.script(
            OWNER & prompt_contains("Your turn: wrap up"), [owner_says("DONE\nWrapped up.")]
        )
        # The owner's fix waits for its model until the person's `/arbitrate` is in the store,
        # so the request surely arrives while the turn runs, however loaded the machine.
        fix_may_answer = threading.Event()
        fake.script(
            OWNER & prompt_contains("RAISE-VALUEERROR"),
            [
                held(_bash(fix), fix_may_answer),
                owner_says("DONE\nFIXED-PER-RULING: div() raises ValueError"),
            ],
        )
        fake.script(
            OWNER,
            [
                owner_says("DONE\nPython already raises for b == 0; nothing to change."),
                owner_says("DONE\nA ZeroDivisionError is a ValueError in spirit; left as is."),
                owner_says("DONE\nRe-read it: the current behaviour is right, no edit."),
            ],
        )
        fake.script(
            REVIEWER & prompt_contains("FIXED-PER-RULING"), [reviewer_says("APPROVED\ngood")]
        )
        fake.script(REVIEWER, [reviewer_says(r) for r in REWORDED])
        fake.script(
            ARBITER & prompt_contains("LOOK-AT-MESSAGE"),
            # Two agreeing readings each: the swap check is on by default.
            [structured(_ruling("PROCEED", reasons="The message names b; review it as is."))] * 2,
        )
        fake.script(ARBITER, [structured(_ruling("REVISE", conditions=[CONDITION]))] * 2)

        env = _env(
            tmp_path,
            ANTHROPIC_BASE_URL=fake.url,
            ANTHROPIC_API_KEY="sk-ant-e2e",
            TRIBUNAL_CONSOLE__WORKSPACE=str(workspace),
        )
        chat = subprocess.Popen(
            [str(TRIBUNAL), "chat", "--no-lockstep"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert chat.stdin is not None
            chat.stdin.write("make div() in calc.py safe when b is zero\n")
            chat.stdin.flush()
            deadline = time.monotonic() + 300
            while not any(
                "RAISE-VALUEERROR" in " ".join(c.user_texts()) and "You are the owner" in c.system
                for c in fake.calls
            ):
                assert chat.poll() is None and time.monotonic() < deadline, "no fix turn"
                time.sleep(0.2)
            chat.stdin.write(f"/arbitrate {NOTE}\n")
            chat.stdin.flush()
            while _pending_summon(tmp_path) is None:
                assert chat.poll() is None and time.monotonic() < deadline, "no summon stored"
                time.sleep(0.1)
            fix_may_answer.set()
            out, err = chat.communicate(timeout=300)
        finally:
            if chat.poll() is None:
                chat.kill()
                chat.wait()
    assert chat.returncode == 0, err + out
    assert "Traceback" not in err

    # The fix is in the task's worktree and the engine committed it on the task's branch; the
    # checkout itself is left as it was (rooms/work/worktrees.py).
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=workspace, check=True, capture_output=True, text=True
        ).stdout

    [branch] = git("branch", "--list", "tribunal/1-*", "--format=%(refname:short)").split()
    assert 'raise ValueError("b must not be 0")' in git("show", f"{branch}:calc.py")
    assert "raise" not in (workspace / "calc.py").read_text()

    db = sqlite3.connect(tmp_path / "data" / "tribunal.db")
    assert db.execute("SELECT status FROM tasks").fetchone() == ("closed",)
    turns = db.execute("SELECT role, status, marker FROM turns ORDER BY seq").fetchall()
    assert [t[0] for t in turns] == [
        *["owner", "reviewer"] * 3,
        *["arbiter"] * 2,  # the stall, caught by `unchanged` at the second unchanged round
        "owner",  # the fix; the person's `/arbitrate` came while it ran, and it finished
        *["arbiter"] * 2,  # summoned (both readings of the swap check)
        "reviewer",
        "owner",
    ], turns
    assert all(t[1] == "done" for t in turns), turns
    firings = db.execute("SELECT detector, reason, extra FROM firings WHERE acted").fetchall()
    assert [f[0] for f in firings] == ["unchanged", "summoned"], firings
    assert json.loads(firings[1][2])["by"] == "alice"
    assert db.execute("SELECT verdict FROM verdicts ORDER BY id").fetchall() == [
        ("REVISE",),
        ("PROCEED",),
    ]
    assert db.execute("SELECT arbitrations FROM tasks").fetchone() == (2,)
    summoned = [c for c in fake.calls if "You are the arbiter" in c.system][-1]
    assert f"> {NOTE}" in " ".join(summoned.user_texts())  # the note, quoted, in its prompt
    assert "alice called the arbiter" in out and "done and closed" in out, out
