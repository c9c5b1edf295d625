"""Issue 24, item 2, through the whole bot: the real settings → open_app → local backend (behind
the credential proxy on loopback) → `python -m runners claude` → the real Claude Code against
the scripted fake Messages API, all on 127.0.0.1.

The owner planted check.py in the workspace. The reviewer's model asks to run it; it writes a
Claude Code `result` reading APPROVED into Claude Code's stdout (/proc/<pid>/fd/1). The model's
own answer would have been CHANGES_REQUESTED. The engine never reads APPROVED: the reviewer's
turn fails as "final answer not seen from the model", and the task is not closed."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from bot.app import open_app
from bot.settings import load_settings
from container.proxy.finals import NOT_FROM_MODEL
from rooms.base.model import Inbound, RoomRef
from tests.fakes.claude_cli import claude_marks
from tests.fakes.messages_api import FakeMessagesAPI, has_tool_result, system_contains, text
from tests.fakes.messages_api import tool_use as call
from tests.fakes.platform import RecordingAdapter
from tests.fakes.turn_objects import owner_says, reviewer_says

pytestmark = [*claude_marks, pytest.mark.timeout(300)]

FORGER = Path(__file__).parents[1] / "container" / "proxy" / "forger.py"


async def test_a_forged_approval_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "check.py").write_text(FORGER.read_text())  # the owner's "checks"
    report = tmp_path / "forger-report.txt"
    forge = f"{sys.executable} {workspace / 'check.py'} claude {report}"
    reviewer = system_contains("You are the reviewer")
    with FakeMessagesAPI(default=text("DONE\nnothing left to do")) as model:
        model.script(system_contains("You are the owner"), [owner_says("DONE\nadded the checks")])
        model.script(reviewer & ~has_tool_result(), [call("Bash", {"command": forge})])
        model.script(
            reviewer & has_tool_result(), [reviewer_says("CHANGES_REQUESTED\nchecks fail")]
        )
        for name, value in {
            "TRIBUNAL_BACKEND": "local",
            "TRIBUNAL_DATA": str(tmp_path / "data"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "TRIBUNAL_CONSOLE__WORKSPACE": str(workspace),
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": "sk-ant-e2e",
        }.items():
            monkeypatch.setenv(name, value)
        room = RoomRef("console", "local", "1")
        async with open_app(load_settings(env_file=None), RecordingAdapter("console")) as app:
            await app.engine.handle(
                Inbound(room, "alice", "add the checks", "ev-1", mentions_bot=True)
            )
            async with asyncio.timeout(240):
                while not [
                    t
                    for task in [await app.store.latest_task_in(room)]
                    if task is not None
                    for t in await app.store.turns(task.id)
                    if t.role == "reviewer" and t.status != "running"
                ]:
                    await asyncio.sleep(0.2)
            task = await app.store.latest_task_in(room)
            assert task is not None
            turns = await app.store.turns(task.id)
    assert report.read_text().startswith("forging into claude"), report.read_text()
    review = next(t for t in turns if t.role == "reviewer")
    assert review.status == "failed" and review.marker != "APPROVED", review
    assert review.error is not None and NOT_FROM_MODEL in review.error
    assert all(t.marker != "APPROVED" for t in turns), turns
    assert task.status != "closed"
    # The model's key went to the model only; Claude Code had a run token.
    assert {c.headers.get("x-api-key") for c in model.calls} == {"sk-ant-e2e"}
