"""Structured owner and reviewer turns with the real Codex CLI (`tribunal chat`, the local
backend, the scripted fake Responses API on 127.0.0.1): each owner and reviewer turn passes its
role's schema to `codex exec --output-schema`, Codex asks the model for a `json_schema` answer,
and the engine reads the validated object. A reviewer whose answer is an object the schema does
not allow (a verdict it has not) falls back to its text, which holds no marker, so it is not an
approval; the store records the fallback (`marker_source = text`), and `status` counts it.

Owner DONE (object) → reviewer with an invalid object (text fallback: unmarked, changes
requested) → owner DONE (object) → reviewer APPROVED (object) → wrap-up (object) → closed.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from rooms.judge.turn_objects import OWNER_SCHEMA, REVIEWER_SCHEMA
from tests.bot.test_chat_cli import TRIBUNAL, _env
from tests.fakes.codex import CODEX_BIN, needs_codex
from tests.fakes.responses_api import (
    FakeResponsesAPI,
    RecordedRequest,
    last_prompt_contains,
    structured,
)
from tests.fakes.scripted_api import Matcher
from tests.fakes.turn_objects import review_object, work_object

pytestmark = [pytest.mark.codex, needs_codex, pytest.mark.timeout(300)]


def role(name: str) -> Matcher[RecordedRequest]:
    """A request of the owner's or the reviewer's turn: its role prompt is Codex's developer
    message (runners/codex.py `developer_instructions`)."""
    return Matcher(lambda r, i: f"You are the {name}" in r.instructions, f"role {name}")


OWNER, REVIEWER = role("owner"), role("reviewer")


def _role_of(request: RecordedRequest) -> str | None:
    return next(
        (n for n in ("owner", "reviewer") if f"You are the {n}" in request.instructions), None
    )


INVALID = {**review_object("APPROVED", prose="Ship it."), "verdict": "SHIP_IT"}


def test_codex_owner_and_reviewer_turns_end_with_validated_objects(tmp_path: Path) -> None:
    assert CODEX_BIN is not None
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeResponsesAPI(default=structured(work_object("DONE", prose="nothing to add"))) as fake:
        fake.script(
            OWNER & last_prompt_contains("Your turn: wrap up"),
            [structured(work_object("DONE", prose="wrapped up"))],
        )
        fake.script(
            REVIEWER,
            [
                structured(INVALID),
                structured(review_object("APPROVED", prose="The guard holds.")),
            ],
        )
        fake.script(
            OWNER,
            [
                structured(work_object("DONE", prose="wrote div()")),
                structured(work_object("DONE", prose="checked div() again")),
            ],
        )
        done = subprocess.run(
            [str(TRIBUNAL), "chat"],
            input="write calc.div\n/status\n",
            capture_output=True,
            text=True,
            env=_env(
                tmp_path,
                OPENAI_BASE_URL=fake.base_url,
                OPENAI_API_KEY="sk-oai-structured",
                TRIBUNAL_CODEX_BIN=CODEX_BIN,
                TRIBUNAL_CONSOLE__OWNER__AGENT="codex",
                TRIBUNAL_CONSOLE__REVIEWER__AGENT="codex",
                TRIBUNAL_CONSOLE__WORKSPACE=str(workspace),
            ),
            timeout=280,
        )
        assert done.returncode == 0, done.stderr
        out = done.stdout
        assert "done and closed" in out, out
        # The thread shows each object's prose, not its JSON.
        assert "[owner] wrote div()\n" in out and "[reviewer] The guard holds.\n" in out, out
        # The status counts the fallback: one marker read from text, four from objects.
        assert "Markers: 1 read from text, 4 from objects" in out, out
        pair = [r for r in fake.calls if r.is_responses_call and _role_of(r)]
        assert len(pair) >= 5
        # Every owner and reviewer request asked the model for its role's schema.
        for request in pair:
            wanted = (
                OWNER_SCHEMA if "You are the owner" in request.instructions else REVIEWER_SCHEMA
            )
            assert request.output_schema is not None
            assert set(request.output_schema["properties"]) == set(wanted["properties"])

    with contextlib.closing(sqlite3.connect(tmp_path / "data" / "tribunal.db")) as db:
        rows = db.execute(
            "SELECT role, marker, marker_source, unmarked, structured, output FROM turns"
            " ORDER BY seq"
        ).fetchall()
    assert [(r[0], r[1], r[2], bool(r[3])) for r in rows] == [
        ("owner", "DONE", "object", False),
        ("reviewer", "CHANGES_REQUESTED", "text", True),  # the invalid object: text, unmarked
        ("owner", "DONE", "object", False),
        ("reviewer", "APPROVED", "object", False),
        ("owner", "DONE", "object", False),
    ]
    # A validated object is stored as the engine read it; the stored output is its prose.
    assert json.loads(rows[3][4])["verdict"] == "APPROVED" and rows[3][5] == "The guard holds."
    # The invalid answer is kept as the model gave it (its text), never taken as an approval.
    assert "SHIP_IT" in rows[1][5]
