"""`python -m runners codex` with the real Codex CLI against the fake Responses API on loopback.

Each test starts the runner as the host does (one request line on stdin, events on stdout) with
a private HOME/CODEX_HOME and the fake's provider variables, and checks both sides: the events
the runner printed and the requests that reached the fake.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runners._procs import descendants
from runners.protocol import AGENT, PROTOCOL, RunRequest, decode_event, encode
from tests.fakes.codex import REPO, codex_env, needs_codex, run_codex_runner
from tests.fakes.responses_api import (
    FakeResponsesAPI,
    Usage,
    api_error,
    delayed,
    has_tool_output,
    last_prompt_contains,
    reasoning,
    shell,
    structured,
    text,
)

pytestmark = [pytest.mark.codex, needs_codex]


@pytest.fixture
def fake() -> Iterator[FakeResponsesAPI]:
    with FakeResponsesAPI() as api:
        yield api


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    (path / "README.md").write_text("hello\n")
    return path


@pytest.fixture
def env(fake: FakeResponsesAPI, tmp_path: Path) -> dict[str, str]:
    return codex_env(fake.env(), tmp_path / "home")


def turn(workspace: Path, **fields: object) -> RunRequest:
    base: dict[str, object] = {"role": "owner", "prompt": "do the task", "cwd": str(workspace)}
    return RunRequest.model_validate({**base, **fields})


def test_a_plain_answer_gives_session_usage_and_final(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    fake.script(
        last_prompt_contains("add the flag"),
        [text("DONE\nadded the flag", usage=Usage(input_tokens=321, output_tokens=45))],
    )
    result = run_codex_runner(turn(workspace, prompt="add the flag", model="gpt-fake"), env)
    assert result.status == 0, result.stderr
    assert result.kinds()[0] == "session" and result.kinds()[-1] == "final"
    assert result.one("final").text == "DONE\nadded the flag"
    usage = result.one("usage")
    assert (usage.input_tokens, usage.output_tokens) == (321, 45)
    session_id = result.one("session").session_id
    assert session_id and fake.calls[0].headers.get("session-id") == session_id
    [call] = fake.calls
    assert call.body["model"] == "gpt-fake" and call.body["stream"] is True
    assert call.headers["authorization"] == "Bearer sk-fake-openai"
    assert call.user_texts()[-1] == "add the flag"  # the prompt alone: no <stdin> block
    fake.assert_all_consumed()


def test_the_system_prompt_reaches_the_model_as_instructions(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    system = 'You are the REVIEWER of "tribunal".\nBegin with a marker line.'
    result = run_codex_runner(turn(workspace, system_prompt=system), env)
    assert result.status == 0, result.stderr
    [call] = fake.calls
    assert system in call.instructions
    assert all(system not in t for t in call.user_texts())


def test_an_output_schema_gives_structured_output(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    schema = {
        "type": "object",
        "properties": {"marker": {"type": "string", "enum": ["DONE", "BLOCKED"]}},
        "required": ["marker"],
        "additionalProperties": False,
    }
    fake.script(last_prompt_contains("do the task"), [structured({"marker": "DONE"})])
    result = run_codex_runner(turn(workspace, output_schema=schema), env)
    assert result.status == 0, result.stderr
    final = result.one("final")
    assert final.structured == {"marker": "DONE"} and json.loads(final.text) == {"marker": "DONE"}
    assert fake.calls[0].output_schema == schema


def test_the_owner_runs_a_shell_command_that_writes_into_the_workspace(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    fake.script(~has_tool_output(), [reasoning("writing the file") + shell("echo 42 > out.txt")])
    fake.script(has_tool_output(), [text("DONE\nwrote out.txt")])
    result = run_codex_runner(turn(workspace, read_only=False), env)
    assert result.status == 0, result.stderr
    assert (workspace / "out.txt").read_text() == "42\n"
    assert "writing the file" in [e.text for e in result.of("progress")]
    assert [(e.tool, "echo 42 > out.txt" in e.text) for e in result.of("tool")] == [("shell", True)]
    assert result.one("final").text == "DONE\nwrote out.txt"
    assert "exited with code 0" in fake.calls[1].tool_output_text()
    # Two model calls in one turn: the usage event adds them up.
    assert result.one("usage").input_tokens == 200
    fake.assert_all_consumed()


def test_the_reviewer_cannot_write_into_the_workspace(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    fake.script(~has_tool_output(), [shell("echo 42 > out.txt")])
    fake.script(has_tool_output(), [text("CHANGES_REQUESTED\ncould not write")])
    result = run_codex_runner(turn(workspace, role="reviewer", read_only=True), env)
    assert result.status == 0, result.stderr
    assert not (workspace / "out.txt").exists()
    assert "Read-only file system" in fake.calls[1].tool_output_text()
    assert result.one("final").text.startswith("CHANGES_REQUESTED")


def test_with_an_external_sandbox_the_owner_still_writes(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    fake.script(~has_tool_output(), [shell("echo 7 > ext.txt")])
    fake.script(has_tool_output(), [text("DONE")])
    result = run_codex_runner(
        turn(workspace, read_only=False), {**env, "TRIBUNAL_CODEX_SANDBOX": "external"}
    )
    assert result.status == 0, result.stderr
    assert (workspace / "ext.txt").read_text() == "7\n"


def test_resume_continues_the_thread_with_the_earlier_conversation(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    fake.script(
        last_prompt_contains("first question"),
        [text("first answer", usage=Usage(input_tokens=100, output_tokens=10))],
    )
    fake.script(
        last_prompt_contains("second question") & ~has_tool_output(),
        [shell("echo again > resumed.txt", usage=Usage(input_tokens=7, output_tokens=3))],
    )
    fake.script(
        has_tool_output(), [text("second answer", usage=Usage(input_tokens=5, output_tokens=1))]
    )
    first = run_codex_runner(turn(workspace, prompt="first question"), env)
    assert first.status == 0, first.stderr
    thread = first.one("session").session_id
    second = run_codex_runner(
        turn(workspace, prompt="second question", resume_session_id=thread, read_only=False), env
    )
    assert second.status == 0, second.stderr
    assert second.one("session").session_id == thread
    assert second.one("final").text == "second answer"
    resumed = fake.calls[1]
    prompts = [t for t in resumed.user_texts() if "question" in t]
    assert prompts == ["first question", "second question"]
    assert resumed.user_texts()[-1] == "second question"
    assert resumed.assistant_texts() == ["first answer"]
    # The resumed turn works in the same folder, with the sandbox the new request asks for.
    assert (workspace / "resumed.txt").read_text() == "again\n"
    # Codex reports the thread's totals; the runner reports this turn's share only.
    usage = second.one("usage")
    assert (usage.input_tokens, usage.output_tokens) == (12, 4)


def test_resume_of_a_lost_thread_starts_a_new_one(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    # As after a container restart: CODEX_HOME no longer has the thread.
    fake.script(last_prompt_contains("carry on"), [text("DONE\nstarted afresh")])
    unknown = "01a22c35-0000-7000-8000-000000000000"
    result = run_codex_runner(turn(workspace, prompt="carry on", resume_session_id=unknown), env)
    assert result.status == 0, result.stderr
    assert f"codex: thread {unknown} not found; starting a new thread" in [
        e.text for e in result.of("progress")
    ]
    new_thread = result.one("session").session_id
    assert new_thread and new_thread != unknown
    assert result.one("final").text == "DONE\nstarted afresh"
    [call] = fake.calls
    assert call.assistant_texts() == [] and call.user_texts()[-1] == "carry on"


def test_an_api_error_is_an_agent_error_and_a_failed_exit(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    fake.script(last_prompt_contains("do the task"), [api_error(400, "quota exceeded, pay up")])
    result = run_codex_runner(turn(workspace), env)
    assert result.status == 1
    assert result.kinds()[-1] == "error" and "final" not in result.kinds()
    error = result.one("error")
    assert error.code == AGENT and "quota exceeded, pay up" in error.text


def test_an_unreachable_model_api_ends_the_turn_after_the_grace_time(
    env: dict[str, str], workspace: Path
) -> None:
    # A port nothing listens on: Codex would report "waiting for network" forever.
    closed = {
        **env,
        "TRIBUNAL_CODEX_BASE_URL": "http://127.0.0.1:9/v1",
        "TRIBUNAL_CODEX_UNREACHABLE_S": "1",
    }
    result = run_codex_runner(turn(workspace), closed, timeout=60)
    assert result.status == 1
    error = result.one("error")
    assert (
        error.code == AGENT and "unreachable" in error.text and "waiting for network" in error.text
    )


def test_a_bad_request_line_is_a_protocol_error(env: dict[str, str]) -> None:
    result = run_codex_runner('{"role": "owner"}\n', env)
    assert result.status == 2
    assert result.one("error").code == PROTOCOL


def test_a_missing_workspace_or_binary_is_a_clear_error(
    env: dict[str, str], workspace: Path
) -> None:
    missing_dir = run_codex_runner(turn(workspace / "nope"), env)
    assert missing_dir.status == 1 and "does not exist" in missing_dir.one("error").text
    no_binary = run_codex_runner(turn(workspace), {**env, "CODEX_BIN": "/nonexistent/codex"})
    assert no_binary.status == 1 and "CODEX_BIN" in no_binary.one("error").text
    not_a_program = workspace / "codex"
    not_a_program.write_bytes(b"\x00\x01 not an executable format")
    not_a_program.chmod(0o755)
    broken = run_codex_runner(turn(workspace), {**env, "CODEX_BIN": str(not_a_program)})
    assert broken.status == 1 and "cannot start codex" in broken.one("error").text
    bad_url = run_codex_runner(turn(workspace), {**env, "TRIBUNAL_CODEX_BASE_URL": "localhost:1"})
    assert bad_url.status == 1 and "http(s)" in bad_url.one("error").text


def test_terminating_the_runner_stops_codex(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    fake.script(last_prompt_contains("do the task"), [delayed(text("too late"), 60)])
    runner = subprocess.Popen(
        [sys.executable, "-m", "runners", "codex"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=REPO,
    )
    try:
        assert runner.stdin and runner.stdout
        runner.stdin.write(encode(turn(workspace)).encode())
        runner.stdin.close()
        assert decode_event(runner.stdout.readline()).kind == "session"
        deadline = time.monotonic() + 30
        while not fake.calls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake.calls, "codex never asked the model"
        codex_pids = descendants(runner.pid)
        assert codex_pids
        runner.send_signal(signal.SIGTERM)
        assert runner.wait(timeout=30) == 128 + signal.SIGTERM
        for pid in codex_pids:
            assert not _alive(pid), f"codex process {pid} outlived the runner"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_nothing_but_events_on_stdout_even_with_a_noisy_codex(
    fake: FakeResponsesAPI, env: dict[str, str], workspace: Path
) -> None:
    # Codex prints warnings on stderr ("Reading additional input…", PATH aliases); the command's
    # own output lands in events, never as raw lines: run_codex_runner decodes every line.
    fake.script(~has_tool_output(), [shell("echo noisy; echo err >&2")])
    fake.script(has_tool_output(), [text("DONE")])
    result = run_codex_runner(turn(workspace, read_only=False), env)
    assert result.status == 0, result.stderr
    assert os.path.exists(workspace / "README.md")
