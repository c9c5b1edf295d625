"""One run with the real Claude Code arbiter (the binary of the claude-agent-sdk wheel) through
`tribunal chat` and the real wiring, a reference on the real openai SDK: both against fake APIs
on 127.0.0.1. The arbiter's actual request carries the reference opinion under its neutral
label and no name of the reference; the ruling, its tally and the panel are stored; the room
shows the reference under the ruling."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.bot.test_chat_cli import TRIBUNAL, _env
from tests.fakes import chat_api
from tests.fakes.chat_api import FakeChatAPI
from tests.fakes.messages_api import (
    FakeMessagesAPI,
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
RULING = ruling_object(
    "REVISE",
    reasons="R1 is right: the integration tests can mock the API",
    conditions=["MOCK-THE-API in the integration tests"],
    references_cited=["R1"],
)


@pytest.mark.claude
def test_the_claude_code_arbiter_reads_the_reference_under_its_label(tmp_path: Path) -> None:
    with FakeMessagesAPI(default=text("DONE\nnothing to add")) as fake, FakeChatAPI() as ref:
        ref.script(
            chat_api.any_request(),
            [chat_api.text("VERDICT: REVISE\nMOCK-IT-SAYS-R: the staging key is not needed")],
        )
        fake.script(OWNER & prompt_contains("Your turn: wrap up"), [owner_says("DONE\nwrapped up")])
        fake.script(OWNER & prompt_contains("MOCK-THE-API"), [owner_says("DONE\nmocked the API")])
        fake.script(OWNER, [owner_says("BLOCKED: I need the staging API key to run the tests")])
        fake.script(REVIEWER, [reviewer_says("APPROVED\ngood")], repeat_last=True)
        fake.script(ARBITER, [structured(RULING)] * 2)  # the swap check's two readings agree
        config = tmp_path / "tribunal.toml"
        config.write_text(
            "[console]\nallow_private_urls = true\n[[console.references]]\n"
            f'name = "local-llm"\napi = "openai-chat"\nbase_url = "{ref.url}/v1"\n'
            'model = "qwen-test-7b"\nkey_env = "LOCAL_LLM_KEY"\ntimeout_s = 30\n'
        )
        env = _env(
            tmp_path,
            ANTHROPIC_BASE_URL=fake.url,
            ANTHROPIC_API_KEY="sk-ant-e2e",
            LOCAL_LLM_KEY="sk-local-e2e",
        )
        done = subprocess.run(
            [str(TRIBUNAL), "--config", str(config), "chat"],
            input="add integration tests for the client\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        arbiter_calls = [c for c in fake.calls if "You are the arbiter" in c.system]
        [asked] = ref.calls
    out = done.stdout
    assert done.returncode == 0, done.stderr + out
    assert asked.headers["authorization"] == "Bearer sk-local-e2e"
    assert "staging API key" in asked.user_texts()[0]
    # What the real arbiter was sent: the opinion under R1, no name of the reference.
    sent = "\n".join(arbiter_calls[0].user_texts())
    assert "## Reference opinions" in sent and "### R1" in sent and "MOCK-IT-SAYS-R" in sent
    assert "local-llm" not in sent and "qwen" not in sent.lower()
    assert "- R1 local-llm (qwen-test-7b): REVISE" in out, out
    db = sqlite3.connect(tmp_path / "data" / "tribunal.db")
    (status,) = db.execute("SELECT status FROM tasks").fetchone()
    assert status == "closed", out
    (verdict, tally, panel_id) = db.execute(
        "SELECT verdict, tally, panel_id FROM verdicts"
    ).fetchone()
    assert verdict == "REVISE" and '"REVISE": 1' in tally and panel_id is not None
    rows = db.execute('SELECT label, name, model, verdict FROM "references"').fetchall()
    assert rows == [("R1", "local-llm", "qwen-test-7b", "REVISE")]
