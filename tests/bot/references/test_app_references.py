"""The wiring end to end: settings with a reference → open_app → the engine asks it through the
real openai SDK (a fake Chat Completions API on loopback) before the scripted arbiter rules; and
a reference refused at connect time is dropped from the panel, the ruling still made."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bot.app import open_app
from bot.references import network
from bot.settings import load_settings
from rooms.base.model import Inbound, RoomRef
from rooms.base.records import VerdictRow
from tests.fakes import chat_api
from tests.fakes.chat_api import FakeChatAPI
from tests.fakes.network import FakeDNS
from tests.fakes.platform import RecordingAdapter
from tests.fakes.rulings import ruling_object
from tests.fakes.runner import ScriptedRunner, say

RULING = ruling_object(
    "REVISE",
    reasons="R1 is right: the tests can mock the API",
    conditions=["mock the API in the tests"],
    references_cited=["R1"],
)


async def test_the_console_group_asks_its_reference_before_the_ruling(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("LOCAL_LLM_KEY", "sk-local-fake")
    with FakeChatAPI() as fake:
        fake.script(
            chat_api.any_request(),
            [chat_api.text("VERDICT: REVISE\nmock the API; the key is not needed")],
        )
        Path("tribunal.toml").write_text(
            "[console]\nallow_private_urls = true\nreference_deadline_s = 30\n"
            "[[console.references]]\n"
            f'name = "local-llm"\napi = "openai-chat"\nbase_url = "{fake.url}/v1"\n'
            'model = "qwen-test-7b"\nkey_env = "LOCAL_LLM_KEY"\ntimeout_s = 20\n'
        )
        runner, adapter, verdict = await _blocked_task(RULING)
        [call] = fake.calls
        assert call.headers["authorization"] == "Bearer sk-local-fake"
        assert "staging API key" in call.user_texts()[0]
    arbiter = runner.calls_for("arbiter")[0]
    assert "### R1" in arbiter.prompt and "qwen" not in arbiter.prompt.lower()
    assert verdict.tally is not None and verdict.tally["counts"] == {"REVISE": 1}
    posted = next(t for t in adapter.texts() if t.startswith("⚖️ Ruling: REVISE"))
    assert "- R1 local-llm (qwen-test-7b): REVISE" in posted


async def test_a_reference_whose_name_resolves_to_a_private_address_is_dropped_not_fatal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The group does not allow private URLs and the base URL's name looks public, so the
    # settings load; at the call, its DNS says loopback, where the fake listens: the connection
    # is refused (the fake never hears of it) and the arbiter rules without the reference.
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("LOCAL_LLM_KEY", "sk-local-fake")
    dns = FakeDNS({"models.innocent.example": ["127.0.0.1"]})
    monkeypatch.setattr(network, "system_resolve", dns.resolve)  # no DNS in tests
    alone = {**RULING, "reasons": "the tests can mock the API", "references_cited": []}
    with FakeChatAPI() as fake:
        Path("tribunal.toml").write_text(
            "[console]\nreference_deadline_s = 30\n[[console.references]]\n"
            'name = "local-llm"\napi = "openai-chat"\n'
            f'base_url = "http://models.innocent.example:{fake.port}/v1"\n'
            'model = "qwen-test-7b"\nkey_env = "LOCAL_LLM_KEY"\ntimeout_s = 20\nmax_retries = 0\n'
        )
        runner, adapter, verdict = await _blocked_task(alone)
        assert fake.requests == []
    assert dns.lookups == ["models.innocent.example"]
    assert "### R1" not in runner.calls_for("arbiter")[0].prompt
    assert verdict.ruling.verdict == "REVISE" and verdict.tally is not None
    posted = next(t for t in adapter.texts() if t.startswith("⚖️ Ruling: REVISE"))
    assert (
        "- local-llm (qwen-test-7b): refused: models.innocent.example resolves to a loopback "
        "address (127.0.0.1)"
    ) in posted


async def _blocked_task(
    ruling: dict[str, Any],
) -> tuple[ScriptedRunner, RecordingAdapter, VerdictRow]:
    """One console task through the whole app (settings from ./tribunal.toml): the owner is
    blocked, the arbiter rules REVISE with `ruling` as its structured output, then approved."""
    runner = ScriptedRunner(
        {
            "owner": ["BLOCKED: I need the staging API key", "DONE\nmocked", "DONE\nwrapped"],
            # The swap check's two readings, agreeing.
            "arbiter": [say("VERDICT: REVISE\nmock it", structured=ruling)] * 2,
            "reviewer": ["APPROVED"],
        }
    )
    adapter = RecordingAdapter("console")
    async with open_app(load_settings(env_file=None), adapter, runner=runner) as app:
        room = RoomRef("console", "local", "1")
        await app.engine.handle(
            Inbound(room=room, user="alice", text="add tests", event_id="e1", mentions_bot=True)
        )
        async with asyncio.timeout(60):
            await app.engine.idle()
        [verdict] = await app.store.verdicts(1)
    return runner, adapter, verdict
