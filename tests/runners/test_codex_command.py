"""How the Codex runner turns a request and its environment into a `codex exec` command (no
binary needed; the integration tests in test_codex_runner.py check that Codex accepts it)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runners.codex import (
    MAX_ARGUMENT_CHARS,
    SetupError,
    UsageLedger,
    build_command,
    codex_binary,
    codex_home,
    provider_overrides,
    toml_string,
)
from runners.codex_events import TokenTotals
from runners.protocol import RunRequest

BIN = "/opt/codex"


def request(**fields: object) -> RunRequest:
    return RunRequest.model_validate({"role": "owner", "prompt": "do it", **fields})


def config_values(argv: list[str]) -> dict[str, object]:
    """The `-c key=value` overrides, parsed as Codex parses them (TOML)."""
    values: dict[str, object] = {}
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "-c":
            key, _, raw = value.partition("=")
            values[key] = tomllib.loads(f"v = {raw}")["v"]
    return values


@given(st.text())
def test_toml_string_round_trips_any_text(text: str) -> None:
    assert tomllib.loads(f"v = {toml_string(text)}")["v"] == text


def test_a_new_turn_reads_the_prompt_from_stdin_in_the_working_folder() -> None:
    argv, stdin, extra = build_command(request(cwd="/ws"), BIN, {}, None)
    assert argv[:2] == [BIN, "exec"] and argv[-3:] == ["-C", "/ws", "-"]
    assert {"--json", "--skip-git-repo-check"} <= set(argv)
    assert stdin == "do it" and extra == {}


@pytest.mark.parametrize(("read_only", "mode"), [(True, "read-only"), (False, "workspace-write")])
def test_codex_sandbox_follows_the_read_only_flag(read_only: bool, mode: str) -> None:
    argv, _, _ = build_command(request(read_only=read_only), BIN, {}, None)
    assert config_values(argv)["sandbox_mode"] == mode
    assert "--dangerously-bypass-approvals-and-sandbox" not in argv


def test_an_external_sandbox_bypasses_codex_own() -> None:
    env = {"TRIBUNAL_CODEX_SANDBOX": "external"}
    argv, _, _ = build_command(request(read_only=False), BIN, env, None)
    assert "--dangerously-bypass-approvals-and-sandbox" in argv
    assert "sandbox_mode" not in config_values(argv)


@pytest.mark.parametrize(
    ("env", "mode"), [({}, "disabled"), ({"TRIBUNAL_SERVER_TOOLS": "1"}, None)]
)
def test_hosted_web_search_is_off_unless_the_group_allows_server_tools(
    env: dict[str, str], mode: str | None
) -> None:
    """Codex 0.171 offers the model OpenAI's live web search by default: a way to the network
    for an agent without one, which the credential proxy refuses."""
    argv, _, _ = build_command(request(), BIN, env, None)
    assert config_values(argv).get("web_search") == mode


def test_an_unknown_sandbox_setting_is_refused() -> None:
    with pytest.raises(SetupError, match="TRIBUNAL_CODEX_SANDBOX"):
        build_command(request(), BIN, {"TRIBUNAL_CODEX_SANDBOX": "none"}, None)


def test_resume_names_the_thread_before_the_prompt() -> None:
    argv, _, _ = build_command(request(resume_session_id="thread-1", cwd="/ws"), BIN, {}, None)
    assert argv[:3] == [BIN, "exec", "resume"] and argv[-2:] == ["thread-1", "-"]
    assert "-C" not in argv  # `exec resume` has no -C: the process's cwd is the folder


def test_model_schema_and_system_prompt() -> None:
    system = 'You are the "owner".\n\tBe careful with \\ and \x07.'
    argv, _, _ = build_command(
        request(model="gpt-x", system_prompt=system), BIN, {}, Path("/tmp/schema.json")
    )
    assert argv[argv.index("-m") + 1] == "gpt-x"
    assert argv[argv.index("--output-schema") + 1] == "/tmp/schema.json"
    assert config_values(argv)["developer_instructions"] == system


def test_a_system_prompt_too_long_for_an_argument_goes_before_the_prompt() -> None:
    system = "rule\n" * (MAX_ARGUMENT_CHARS // 4)
    argv, stdin, _ = build_command(request(system_prompt=system), BIN, {}, None)
    assert "developer_instructions" not in config_values(argv)
    assert stdin.startswith(system) and stdin.endswith("do it")
    assert max(len(a) for a in argv) < MAX_ARGUMENT_CHARS


@pytest.mark.parametrize(
    ("env", "key_variable"),
    [
        (
            {"TRIBUNAL_CODEX_BASE_URL": "http://127.0.0.1:9/v1", "TRIBUNAL_CODEX_API_KEY": "k"},
            "TRIBUNAL_CODEX_API_KEY",
        ),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k"}, "OPENAI_API_KEY"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "CODEX_API_KEY": "k"}, "CODEX_API_KEY"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, "OPENAI_API_KEY"),
    ],
)
def test_a_base_url_defines_a_custom_provider(env: dict[str, str], key_variable: str) -> None:
    args, extra = provider_overrides(env)
    values = config_values(args)
    assert values["model_provider"] == "tribunal"
    assert values["model_providers.tribunal"] == {
        "name": "Tribunal",
        "base_url": "http://127.0.0.1:9/v1",
        "env_key": key_variable,
        "wire_api": "responses",
        "supports_websockets": False,
    }
    assert extra == {}


def test_our_base_url_wins_over_openai_base_url() -> None:
    env = {"TRIBUNAL_CODEX_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_BASE_URL": "http://x/v1"}
    values = config_values(provider_overrides(env)[0])
    assert values["model_providers.tribunal"]["base_url"] == "http://127.0.0.1:1/v1"  # type: ignore[index]


def test_without_a_base_url_the_default_provider_gets_the_openai_key() -> None:
    assert provider_overrides({"OPENAI_API_KEY": "sk-1"}) == ([], {"CODEX_API_KEY": "sk-1"})
    assert provider_overrides({"OPENAI_API_KEY": "a", "CODEX_API_KEY": "b"}) == ([], {})


@pytest.mark.parametrize("url", ["127.0.0.1:9/v1", "file:///etc/passwd", "ftp://x"])
def test_a_base_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(SetupError, match="http"):
        provider_overrides({"TRIBUNAL_CODEX_BASE_URL": url})


def test_codex_binary_from_codex_bin_or_path(tmp_path: Path) -> None:
    binary = tmp_path / "codex"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert codex_binary({"CODEX_BIN": str(binary)}) == str(binary)
    assert codex_binary({"PATH": str(tmp_path)}) == str(binary)
    with pytest.raises(SetupError, match="not an executable"):
        codex_binary({"CODEX_BIN": str(tmp_path / "missing")})
    with pytest.raises(SetupError, match="not found"):
        codex_binary({"PATH": str(tmp_path / "empty")})


def test_codex_home_is_the_configured_one_else_home_dot_codex_else_a_temp_folder(
    tmp_path: Path,
) -> None:
    assert codex_home({"CODEX_HOME": str(tmp_path / "ch")}) == (tmp_path / "ch", False)
    assert codex_home({"HOME": str(tmp_path)}) == (tmp_path / ".codex", False)
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the home folder should be: not creatable
    temp, throwaway = codex_home({"HOME": str(blocked)})
    assert throwaway and temp.is_dir() and os.access(temp, os.W_OK)
    temp.rmdir()
    with pytest.raises(SetupError, match="CODEX_HOME"):
        codex_home({"CODEX_HOME": str(blocked / "sub")})


def test_the_usage_ledger_remembers_totals_per_thread(tmp_path: Path) -> None:
    ledger = UsageLedger(tmp_path)
    assert ledger.totals("t-1") == TokenTotals()
    ledger.save("t-1", TokenTotals(120, 30))
    assert UsageLedger(tmp_path).totals("t-1") == TokenTotals(120, 30)
    assert ledger.totals("t-2") == TokenTotals() and ledger.totals(None) == TokenTotals()
    ledger._file("t-3").write_text("{not json")
    assert ledger.totals("t-3") == TokenTotals()
