"""Wiring: which variables reach a run. Model credentials per run and per agent type; chat
platform tokens never. Checked through the real LocalBackend with a runner program that reports
the environment it was started with."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bot.app import CredentialedRunner, make_backend, model_env
from bot.cli import EXIT_CONFIG, main
from bot.settings import load_settings
from container.local import LocalBackend
from runners.protocol import RunEvent, RunRequest, RunSpec

ENV_ECHO = """
import json, os, sys
sys.stdin.readline()
print(json.dumps({"kind": "final", "text": json.dumps(dict(os.environ))}), flush=True)
"""


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/anthropic")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-oai-test")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret")
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "discord-secret")


def spec(agent: str, env: dict[str, str] | None = None) -> RunSpec:
    request = RunRequest(role="owner", prompt="hi")
    return RunSpec(group="console", agent=agent, request=request, env=env or {})  # type: ignore[arg-type]


def test_model_env_is_split_by_agent_type(credentials: None) -> None:
    env = model_env(load_settings(env_file=None))
    assert env["claude"] == {
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/anthropic",
    }
    assert env["codex"] == {"OPENAI_API_KEY": "sk-oai-test"}


def test_codex_binary_is_passed_for_the_local_backend_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIBUNAL_CODEX_BIN", "/opt/codex/bin/codex")
    assert model_env(load_settings(env_file=None))["codex"] == {"CODEX_BIN": "/opt/codex/bin/codex"}
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    assert model_env(load_settings(env_file=None))["codex"] == {}


async def _run_env(runner: CredentialedRunner, run: RunSpec) -> dict[str, str]:
    events: list[RunEvent] = [event async for event in runner.run(run)]
    finals = [e for e in events if e.kind == "final"]
    assert len(finals) == 1, events
    result: dict[str, str] = json.loads(finals[0].text)
    return result


async def test_each_run_gets_the_credentials_of_its_agent_only(
    credentials: None, tmp_path: Path
) -> None:
    script = tmp_path / "env_echo.py"
    script.write_text(ENV_ECHO)
    settings = load_settings(env_file=None)
    backend = LocalBackend(command=[sys.executable, str(script)], env={"HOME": str(tmp_path)})
    runner = CredentialedRunner(backend, model_env(settings))

    claude = await _run_env(runner, spec("claude"))
    assert claude["ANTHROPIC_API_KEY"] == "sk-ant-test"
    assert claude["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/anthropic"
    assert "OPENAI_API_KEY" not in claude

    codex = await _run_env(runner, spec("codex"))
    assert codex["OPENAI_API_KEY"] == "sk-oai-test"
    assert "ANTHROPIC_API_KEY" not in codex

    for env in (claude, codex):
        assert not any(k.startswith(("SLACK_", "DISCORD_")) for k in env)
        assert "xoxb-secret" not in json.dumps(env) and "discord-secret" not in json.dumps(env)


async def test_a_value_set_on_the_spec_wins(credentials: None, tmp_path: Path) -> None:
    script = tmp_path / "env_echo.py"
    script.write_text(ENV_ECHO)
    backend = LocalBackend(command=[sys.executable, str(script)])
    runner = CredentialedRunner(backend, model_env(load_settings(env_file=None)))
    env = await _run_env(runner, spec("claude", {"ANTHROPIC_BASE_URL": "http://127.0.0.1:7"}))
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:7"
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-test"


def test_local_backend_gets_a_home_under_the_data_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    backend = make_backend(load_settings(env_file=None))
    assert isinstance(backend, LocalBackend)
    assert backend.env == {"HOME": str(tmp_path / "data" / "homes")}
    assert (tmp_path / "data" / "homes").is_dir()


def test_docker_backend_is_not_wired_yet(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Until the Docker backend is wired into bot/app.py (container work), asking for it is a
    # settings error, not a crash and not a silent fall-back to unisolated local runs.
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    assert main(["chat"]) == EXIT_CONFIG
    assert "backend (TRIBUNAL_BACKEND): 'docker' is not available" in capsys.readouterr().err
