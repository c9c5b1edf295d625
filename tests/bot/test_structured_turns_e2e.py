"""Structured owner and reviewer turns with the real Claude Code binary (`tribunal chat`, the
local backend, the scripted fake Messages API on 127.0.0.1): each turn asks for its role's
schema, Claude Code offers the model its `StructuredOutput` tool, and the engine reads the
validated object; a model that answers with text only (twice: Claude Code asks once more) falls
back to the text marker, and the store records which.

Owner DONE (object) → reviewer CHANGES_REQUESTED with a new finding (object; the engine numbers
it F1) → owner DONE, addressing F1 (object; its prompt lists F1) → reviewer APPROVED in text
only (its prompt lists F1; the fallback is recorded) → wrap-up → closed.
"""

from __future__ import annotations

import contextlib
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
)
from tests.fakes.turn_objects import finding, owner_says, review_object, work_object

OWNER = system_contains("You are the owner")
REVIEWER = system_contains("You are the reviewer")
LISTED = "> **F1** `calc.py:2`: div() crashes when b == 0"
ENFORCE = "structured-output-enforce"


@pytest.mark.claude
def test_owner_and_reviewer_turns_end_with_validated_objects(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    new = finding("", "calc.py:2", "div() crashes when b == 0")
    with FakeMessagesAPI(default=text("DONE\nnothing to add")) as fake:
        fake.script(OWNER & prompt_contains("Your turn: wrap up"), [owner_says("DONE\nwrapped")])
        fake.script(REVIEWER & prompt_contains(ENFORCE), [text("APPROVED\nthe guard holds")])
        fake.script(REVIEWER & prompt_contains(LISTED), [text("APPROVED\nthe guard works")])
        fake.script(
            REVIEWER,
            [
                structured(
                    review_object("CHANGES_REQUESTED", prose="Zero breaks it.", findings=[new])
                )
            ],
        )
        fake.script(
            OWNER,
            [
                structured(work_object("DONE", prose="wrote div()")),
                structured(work_object("DONE", addressed=["F1"], prose="guarded div() on zero")),
            ],
        )
        done = subprocess.run(
            [str(TRIBUNAL), "chat"],
            input="write calc.div\n",
            capture_output=True,
            text=True,
            env=_env(
                tmp_path,
                ANTHROPIC_BASE_URL=fake.url,
                ANTHROPIC_API_KEY="sk-ant-structured",
                TRIBUNAL_CONSOLE__WORKSPACE=str(workspace),
            ),
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        out = done.stdout
        assert "done and closed" in out, out
        # The posted turn is the prose and the compact findings list, not the JSON (the
        # progress line shows the tool call, as it shows any tool call).
        assert "[reviewer] Zero breaks it.\n" in out and "**F1** `calc.py:2`" in out, out
        assert "[owner] guarded div() on zero\n" in out, out
        requests = fake.calls
        # Every owner and reviewer request offered the schema as Claude Code's StructuredOutput.
        pair = [r for r in requests if "You are the owner" in r.system or "You are the reviewer"
                in r.system]  # fmt: skip
        assert pair and all("StructuredOutput" in r.tool_names for r in pair)
        # The reviewer answered in text only: Claude Code asked once more, then gave up.
        assert any(ENFORCE in t for r in requests for t in r.user_texts())
        # Both the owner's second prompt and the reviewer's second listed F1 by its id.
        listed = [r for r in pair if any(LISTED in t for t in r.user_texts())]
        assert {("owner" if "You are the owner" in r.system else "reviewer") for r in listed} == {
            "owner",
            "reviewer",
        }

    with contextlib.closing(sqlite3.connect(tmp_path / "data" / "tribunal.db")) as db:
        rows = db.execute(
            "SELECT role, marker, marker_source, structured FROM turns ORDER BY seq"
        ).fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("owner", "DONE", "object"),
        ("reviewer", "CHANGES_REQUESTED", "object"),
        ("owner", "DONE", "object"),
        ("reviewer", "APPROVED", "text"),
        ("owner", "DONE", "object"),
    ]
    review = json.loads(rows[1][3])
    assert [(f["id"], f["status"]) for f in review["findings"]] == [("F1", "open")]
    assert json.loads(rows[2][3])["addressed"] == ["F1"]
