"""The Claude runner's translation of Claude Code's stream-json messages into protocol events,
and the command line it starts the CLI with.

No binary needed: the stream-json lines in fixtures/claude_stream were recorded from Claude Code
2.1.332 (the wheel's bundled CLI) against tests/fakes/messages_api.py, and are fed here as the
runner reads them: one JSON object a line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runners.claude import (
    READ_ONLY_DISALLOWED,
    command,
    environment,
    find_cli,
    input_lines,
    working_dir,
    writable_home,
)
from runners.claude_events import (
    SNIPPET_CHARS,
    SUMMARY_CHARS,
    Translator,
    failure_text,
    summarize_tool_input,
    usage_event,
)
from runners.protocol import AGENT, RunEvent, RunRequest

FIXTURES = Path(__file__).parent / "fixtures" / "claude_stream"


def replay(name: str, *, wants_structured: bool = False) -> list[RunEvent]:
    translator = Translator(wants_structured=wants_structured)
    events: list[RunEvent] = []
    for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines():
        events += translator.translate(json.loads(line))
    return events


def kinds(events: list[RunEvent]) -> list[str]:
    return [e.kind for e in events]


def test_owner_edit_turn() -> None:
    events = replay("edit")
    assert kinds(events) == ["session", "progress", "tool", "progress", "usage", "final"]
    session, say, tool, done, usage, final = events
    assert session.session_id == "b0344b01-2904-46f1-a6c8-cefbac121aaa"
    assert say.text == "Editing a.txt"
    assert tool.tool == "Edit" and tool.text.endswith("/a.txt")
    assert done.text == "DONE all good"  # a one-line snippet
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (200, 40, 0.0016)
    assert final.text == "DONE\nall good" and final.structured is None


def test_turn_cap_is_an_agent_error_after_usage() -> None:
    events = replay("max_turns")
    assert kinds(events) == ["session", "tool", "usage", "error"]
    assert events[1].tool == "Bash" and events[1].text == "echo hi"
    assert events[-1].code == AGENT
    assert events[-1].text.startswith("error_max_turns: the agent hit its turn cap")
    assert "Reached maximum number of turns (1)" in events[-1].text


def test_structured_output_becomes_the_final_structured_field() -> None:
    events = replay("structured", wants_structured=True)
    assert kinds(events) == ["session", "tool", "usage", "final"]
    assert events[-1].structured == {"verdict": "PROCEED"}
    assert json.loads(events[-1].text) == {"verdict": "PROCEED"}
    # without a schema in the request the same stream gives no structured field
    assert replay("structured")[-1].structured is None


def test_api_error_names_the_status() -> None:
    events = replay("api_error")
    assert kinds(events) == ["session", "progress", "usage", "error"]
    assert events[-1].code == AGENT
    assert "API error status 400" in events[-1].text
    assert "Prompt is too long" in events[-1].text


def test_a_denied_tool_shows_as_progress() -> None:
    events = replay("denied_write")
    assert kinds(events) == ["session", "tool", "progress", "progress", "usage", "final"]
    assert events[2].text.startswith("Write failed: <tool_use_error>Error: No such tool")


def test_session_is_announced_once() -> None:
    events = replay("edit")
    assert kinds(events).count("session") == 1


def result(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "type": "result",
        "subtype": "success",
        "duration_ms": 1,
        "duration_api_ms": 1,
        "is_error": False,
        "num_turns": 3,
        "session_id": "s",
    }
    fields.update(overrides)
    return fields


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"subtype": "error_max_turns", "is_error": True}, "turn cap after 3 turns"),
        ({"subtype": "error_max_budget_usd", "is_error": True}, "budget cap"),
        ({"subtype": "error_during_execution", "is_error": True}, "failed while running"),
        (
            {"is_error": True, "api_error_status": 529, "result": "Overloaded"},
            "the turn failed — API error status 529 — Overloaded",
        ),
        ({"subtype": "error_new_kind", "is_error": True}, "error_new_kind: the agent reported"),
        ({"subtype": "error_during_execution", "errors": ["disk full"]}, "disk full"),
    ],
)
def test_failure_texts(overrides: dict[str, Any], expected: str) -> None:
    events = Translator(wants_structured=False).translate(result(**overrides))
    assert kinds(events) == ["session", "usage", "error"]
    assert expected in events[-1].text
    assert expected in failure_text(result(**overrides))


def test_usage_counts_cache_tokens_as_input() -> None:
    usage = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000,
        "output_tokens": 7,
    }
    event = usage_event(result(usage=usage, total_cost_usd=0.25))
    assert (event.input_tokens, event.output_tokens, event.cost_usd) == (1110, 7, 0.25)
    assert usage_event(result()).input_tokens == 0  # no usage reported: zeros, no crash


def test_non_object_structured_output_is_wrapped() -> None:
    events = Translator(wants_structured=True).translate(result(structured_output=[1, 2]))
    assert events[-1].structured == {"value": [1, 2]}


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("Bash", {"command": "pytest -q", "description": "run tests"}, "pytest -q"),
        ("Read", {"file_path": "/w/a.py"}, "/w/a.py"),
        ("Grep", {"pattern": "TODO", "path": "src"}, "TODO src"),
        ("Unknown", {"b": 1, "a": "x"}, '{"a": "x", "b": 1}'),
        ("Bash", {"description": "no command"}, '{"description": "no command"}'),
    ],
)
def test_tool_summaries(name: str, args: dict[str, Any], expected: str) -> None:
    assert summarize_tool_input(name, args) == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(
    st.sampled_from(["Bash", "Read", "Edit", "Grep", "X"]), st.dictionaries(st.text(), json_values)
)
def test_tool_summary_is_one_short_line_for_any_input(name: str, args: dict[str, Any]) -> None:
    summary = summarize_tool_input(name, args)
    assert len(summary) <= SUMMARY_CHARS
    assert "\n" not in summary


@given(st.text())
def test_progress_snippets_are_one_short_line(text: str) -> None:
    message = {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}
    for event in Translator(wants_structured=False).translate(message):
        assert event.kind == "progress"
        assert len(event.text) <= SNIPPET_CHARS and "\n" not in event.text and event.text


# ---------------------------------------------------------------------------- options


def request(**overrides: Any) -> RunRequest:
    return RunRequest(role="reviewer", prompt="check", **overrides)


def flag(argv: list[str], name: str) -> str | None:
    """The value of `--name value` or `--name=value` in argv, None when absent."""
    for i, arg in enumerate(argv):
        if arg == name:
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def test_read_only_roles_lose_the_writing_tools() -> None:
    reviewer = command(request(read_only=True), "claude")
    assert flag(reviewer, "--disallowedTools") == ",".join(READ_ONLY_DISALLOWED)
    assert set(READ_ONLY_DISALLOWED) >= {"Write", "Edit", "MultiEdit", "NotebookEdit"}
    assert flag(command(request(read_only=False), "claude"), "--disallowedTools") is None


def test_command_for_an_untrusted_contained_run(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string"}}}
    argv = command(
        request(
            cwd=str(tmp_path),
            model="claude-x",
            max_turns=7,
            max_budget_usd=1.5,
            system_prompt="You are the reviewer.",
            resume_session_id="-abc",
            output_schema=schema,
        ),
        "/bin/claude",
    )
    assert argv[0] == "/bin/claude"
    assert (flag(argv, "--model"), flag(argv, "--max-turns")) == ("claude-x", "7")
    assert flag(argv, "--max-budget-usd") == "1.5"
    assert "--resume=-abc" in argv  # one token: a dash-leading id stays the flag's value
    assert flag(argv, "--setting-sources") == "" and "--strict-mcp-config" in argv
    assert flag(argv, "--permission-mode") == "bypassPermissions"
    assert json.loads(flag(argv, "--json-schema") or "") == schema
    assert flag(argv, "--append-system-prompt") == "You are the reviewer."
    assert flag(argv, "--system-prompt") is None
    assert (flag(argv, "--input-format"), flag(argv, "--output-format")) == (
        "stream-json",
        "stream-json",
    )
    bare = command(request(), "claude")
    assert flag(bare, "--system-prompt") == "" and flag(bare, "--append-system-prompt") is None
    assert flag(bare, "--json-schema") is None and flag(bare, "--resume") is None


def test_environment_is_quiet_and_sandboxed(tmp_path: Path) -> None:
    env = environment(str(tmp_path), "/workspace", {"CLAUDECODE": "1", "PATH": "/bin"})
    assert env["IS_SANDBOX"] == "1" and env["DISABLE_TELEMETRY"] == "1"
    assert env["HOME"] == str(tmp_path) and env["PWD"] == "/workspace"
    assert "CLAUDECODE" not in env and env["PATH"] == "/bin"


def test_the_prompt_is_sent_verbatim_after_initialize() -> None:
    lines = [
        json.loads(x)
        for x in input_lines(RunRequest(role="owner", prompt="see @/etc/passwd")).splitlines()
    ]
    assert [x["type"] for x in lines] == ["control_request", "user"]
    assert lines[0]["request"]["subtype"] == "initialize"
    assert lines[1]["message"] == {"role": "user", "content": "see @/etc/passwd"}
    assert lines[1]["client_composed"] is True  # an @path stays text


def test_the_cli_is_found_without_running_the_sdk(tmp_path: Path) -> None:
    assert find_cli({"TRIBUNAL_CLAUDE_CLI": "/opt/claude"}) == "/opt/claude"
    found = find_cli({"PATH": str(tmp_path)})
    bundled = Path(found or "")
    assert found is None or bundled.name == "claude"


def test_cwd_falls_back_to_the_process_cwd_when_missing(tmp_path: Path) -> None:
    assert working_dir(request(cwd=str(tmp_path))) == str(tmp_path)
    assert working_dir(request(cwd=str(tmp_path / "missing"))) == os.getcwd()


def test_unwritable_home_is_replaced_by_a_temp_dir(tmp_path: Path) -> None:
    assert writable_home({"HOME": str(tmp_path)}) == str(tmp_path)
    fallback = writable_home({"HOME": str(tmp_path / "missing")})
    assert fallback != str(tmp_path / "missing") and os.access(fallback, os.W_OK)
    os.rmdir(fallback)
    fallback = writable_home({})
    assert os.path.isdir(fallback)
    os.rmdir(fallback)
