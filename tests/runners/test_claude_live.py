"""The real Claude Code binary (bundled in the claude-agent-sdk wheel), driven by the real
`python -m runners claude` through the real LocalBackend, against the scripted fake Messages API
on loopback. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from container.local import LocalBackend
from runners.protocol import AGENT, IDLE_TIMEOUT, RunEvent, RunSpec
from tests.fakes.claude_cli import claude_marks
from tests.fakes.live_runs import (
    clock_from_first_call,
    collect,
    live_spec,
    only,
    processes_with_env,
    running,
)
from tests.fakes.messages_api import (
    FakeMessagesAPI,
    Usage,
    api_error,
    has_tool_result,
    prompt_contains,
    slow,
    structured,
    system_contains,
    text,
    tool_use,
)

pytestmark = [*claude_marks, pytest.mark.timeout(120)]


@pytest.fixture
def fake() -> Any:
    with FakeMessagesAPI(default=text("DONE\n(default reply)")) as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small git repository with one committed file."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "greet.py").write_text('print("hello")\n')
    for args in (
        ["init", "-q", "-b", "main"],
        ["-c", "user.email=t@example.invalid", "-c", "user.name=t", "add", "."],
        ["-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=ws, check=True)
    return ws


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def run_spec(fake: FakeMessagesAPI, workspace: Path, home: Path, **request: Any) -> RunSpec:
    fields = {"role": "owner", "prompt": "Change the greeting.", "max_turns": 6, **request}
    return live_spec("claude", workspace, {**fake.env(), "HOME": str(home)}, **fields)


async def test_owner_edits_a_file_through_tool_use(
    fake: FakeMessagesAPI, workspace: Path, home: Path
) -> None:
    target = workspace / "greet.py"
    owner = system_contains("ROLE: OWNER")
    fake.script(
        owner,
        [
            tool_use(
                "Edit",
                {"file_path": str(target), "old_string": "hello", "new_string": "hello, world"},
                say="I will edit greet.py.",
                usage=Usage(input_tokens=300, output_tokens=30, cache_read_input_tokens=1000),
            ),
            tool_use("Bash", {"command": "git diff --stat", "description": "show the change"}),
            text("DONE\nThe greeting now says hello, world.", usage=Usage(400, 50)),
        ],
    )
    spec = run_spec(fake, workspace, home, system_prompt="ROLE: OWNER", read_only=False)
    events = await collect(spec)

    assert target.read_text() == 'print("hello, world")\n'
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=workspace, capture_output=True, text=True
    )
    assert status.stdout.strip() == "M greet.py"
    # Bash ran in the workspace: its output went back to the model
    assert "greet.py | 2 +-" in fake.calls[2].tool_result_text()
    fake.assert_all_consumed()

    kinds = [e.kind for e in events]
    assert kinds[-1] == "final" and kinds.count("final") == 1 and "error" not in kinds
    assert kinds.index("session") < kinds.index("tool")  # announced as soon as known
    (session,) = only(events, "session")
    assert session.session_id and len(session.session_id) == 36
    assert [(e.tool, e.text) for e in only(events, "tool")] == [
        ("Edit", str(target)),
        ("Bash", "git diff --stat"),
    ]
    assert "I will edit greet.py." in [e.text for e in only(events, "progress")]
    (usage,) = only(events, "usage")
    assert usage.input_tokens == 300 + 1000 + 100 + 400  # cache reads count as input
    assert usage.output_tokens == 30 + 20 + 50
    assert usage.cost_usd > 0
    assert events[-1].text == "DONE\nThe greeting now says hello, world."

    # the role prompt was added to Claude Code's own system prompt, not in place of it
    assert "ROLE: OWNER" in fake.calls[0].system
    assert len(fake.calls[0].system) > 1000
    assert {"Write", "Edit", "Bash"} <= set(fake.calls[0].tool_names)


async def test_reviewer_gets_no_writing_tools(
    fake: FakeMessagesAPI, workspace: Path, home: Path
) -> None:
    created = workspace / "sneaky.txt"
    fake.script(
        ~has_tool_result(),
        [tool_use("Write", {"file_path": str(created), "content": "reviewer was here"})],
    )
    fake.script(
        has_tool_result(),
        [
            tool_use(
                "Edit",
                {"file_path": str(workspace / "greet.py"), "old_string": "h", "new_string": "j"},
            ),
            text("CHANGES_REQUESTED\nadd a test"),
        ],
    )
    spec = run_spec(fake, workspace, home, role="reviewer", read_only=True)
    events = await collect(spec)

    offered = set(fake.calls[0].tool_names)
    assert not offered & {"Write", "Edit", "MultiEdit", "NotebookEdit"}
    assert {"Read", "Bash"} <= offered
    assert "No such tool available: Write" in fake.calls[1].tool_result_text()
    assert "No such tool available: Edit" in fake.calls[2].tool_result_text()
    assert not created.exists()
    assert (workspace / "greet.py").read_text() == 'print("hello")\n'
    assert [e.text.split(":")[0] for e in only(events, "progress")][-3:-1] == [
        "Write failed",
        "Edit failed",
    ]
    assert events[-1].kind == "final" and events[-1].text.startswith("CHANGES_REQUESTED")


async def test_events_stream_while_the_agent_works(
    fake: FakeMessagesAPI, workspace: Path, home: Path
) -> None:
    fake.script(
        system_contains(""),
        [tool_use("Read", {"file_path": str(workspace / "greet.py")}), slow(text("DONE"), 2.0)],
    )
    arrivals: list[tuple[float, RunEvent]] = []
    async for event in LocalBackend().run(run_spec(fake, workspace, home)):
        arrivals.append((time.monotonic(), event))
    tool_at = next(at for at, e in arrivals if e.kind == "tool")
    final_at = next(at for at, e in arrivals if e.kind == "final")
    assert final_at - tool_at >= 1.5  # the tool event came while the model was still "thinking"


async def test_at_paths_in_the_prompt_stay_text(
    fake: FakeMessagesAPI, workspace: Path, home: Path, tmp_path: Path
) -> None:
    # The prompt carries chat messages and other agents' output: an @path in it must not make
    # Claude Code attach a local file (it does without verbatim_prompts; checked).
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-CONTENT\n")
    events = await collect(run_spec(fake, workspace, home, prompt=f"look at @{secret} please"))
    assert events[-1].kind == "final"
    sent = json.dumps(fake.calls[0].messages)
    assert f"@{secret}" in sent and "TOPSECRET-CONTENT" not in sent


async def test_workspace_settings_and_their_hooks_are_ignored(
    fake: FakeMessagesAPI, workspace: Path, home: Path, tmp_path: Path
) -> None:
    # An untrusted repository's .claude/settings.json can define hooks (shell commands); with
    # Claude Code's default setting sources this one runs (checked), with ours it must not.
    marker = tmp_path / "hook-ran"
    hook = {"type": "command", "command": f"touch {marker}"}
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}})
    )
    events = await collect(run_spec(fake, workspace, home))
    assert events[-1].kind == "final"
    assert not marker.exists()


async def test_resume_continues_the_same_conversation(
    fake: FakeMessagesAPI, workspace: Path, home: Path
) -> None:
    fake.script(prompt_contains("first question"), [text("DONE\nanswer one")])
    fake.script(prompt_contains("second question"), [text("DONE\nanswer two")])
    first = await collect(run_spec(fake, workspace, home, prompt="first question"))
    (session,) = only(first, "session")
    second = await collect(
        run_spec(
            fake, workspace, home, prompt="second question", resume_session_id=session.session_id
        )
    )
    assert second[-1].kind == "final" and second[-1].text == "DONE\nanswer two"
    assert [e.session_id for e in only(second, "session")] == [session.session_id]
    # the model saw the first exchange again: the history came from the stored session
    resumed = fake.calls[-1]
    assert any("first question" in t for t in resumed.user_texts())
    assert any(
        m["role"] == "assistant" and "answer one" in str(m["content"]) for m in resumed.messages
    )


async def test_structured_output_for_a_schema(
    fake: FakeMessagesAPI, workspace: Path, home: Path
) -> None:
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["PROCEED", "REVISE"]}},
        "required": ["verdict"],
        "additionalProperties": False,
    }
    fake.script(system_contains("ARBITER"), [structured({"verdict": "REVISE"})])
    spec = run_spec(
        fake, workspace, home, role="arbiter", system_prompt="ARBITER", output_schema=schema
    )
    events = await collect(spec)
    assert events[-1].kind == "final"
    assert events[-1].structured == {"verdict": "REVISE"}
    (offered,) = [t for t in fake.calls[0].tools if t["name"] == "StructuredOutput"]
    assert offered["input_schema"] == schema
    assert (
        "output_config" not in fake.calls[0].body
        or "format" not in (fake.calls[0].body["output_config"])
    )


async def test_turn_cap_is_the_agents_error_not_a_crash(
    fake: FakeMessagesAPI, workspace: Path, home: Path
) -> None:
    fake.script(has_tool_result() | ~has_tool_result(), [tool_use("Bash", {"command": "true"})])
    events = await collect(run_spec(fake, workspace, home, max_turns=1))
    assert [e.kind for e in events][-2:] == ["usage", "error"]
    assert events[-1].code == AGENT and "error_max_turns" in events[-1].text


async def test_api_error_is_reported_with_its_status(
    fake: FakeMessagesAPI, workspace: Path, home: Path
) -> None:
    # Claude Code 2.1.332 retries even a 400 (6 attempts seen, within ~2 s) before giving up.
    fake.script(
        system_contains(""), [api_error(400, "this request is malformed")], repeat_last=True
    )
    events = await collect(run_spec(fake, workspace, home))
    assert events[-1].kind == "error" and events[-1].code == AGENT
    assert events[-1].text.startswith("the turn failed — API error status 400")
    assert "this request is malformed" in events[-1].text


# Claude Code refuses `sleep N` ("Blocked: sleep 300 followed by…"), so the job is a `tail -f`.
# `&` escapes into its own session (Claude Code starts each command in a new one); with
# `run_in_background` Claude Code itself keeps the job and would stay up after its result.
@pytest.mark.parametrize(
    "call",
    [
        {"command": "tail -f /dev/null >/dev/null 2>&1 & echo $! > {pidfile}"},
        {"command": "echo $$ > {pidfile}; exec tail -f /dev/null", "run_in_background": True},
    ],
    ids=["ampersand", "run_in_background"],
)
async def test_background_jobs_of_the_agent_end_with_the_turn(
    fake: FakeMessagesAPI, workspace: Path, home: Path, tmp_path: Path, call: dict[str, Any]
) -> None:
    pidfile = tmp_path / "bg.pid"
    call = {**call, "command": call["command"].format(pidfile=pidfile)}
    fake.script(~has_tool_result(), [tool_use("Bash", call)])
    spec = run_spec(fake, workspace, home, read_only=False).model_copy(
        update={"idle_timeout_s": 20.0}
    )
    events = await collect(spec)
    assert [e.kind for e in events][-2:] == ["usage", "final"]
    pid = int(pidfile.read_text())
    assert not running(pid), "the agent's background job outlived the turn"


async def test_idle_timeout_stops_runner_and_claude_code(
    fake: FakeMessagesAPI, workspace: Path, home: Path
) -> None:
    marker = f"TRIBUNAL_TEST_{uuid.uuid4().hex}"
    fake.script(system_contains(""), [slow(text("too late"), 60)])
    spec = run_spec(fake, workspace, home, env={marker: "1"}).model_copy(
        update={"idle_timeout_s": 1.0}
    )
    # The idle second counts from the model call: Claude Code is mid-request when it fires.
    backend = LocalBackend(kill_grace_s=2.0, clock=clock_from_first_call(fake))
    events = await collect(spec, backend)
    assert events[-1].code == IDLE_TIMEOUT
    assert fake.calls, "Claude Code had asked the model before the timeout"
    assert processes_with_env(marker) == []


async def test_a_turn_on_a_spare_runner_gets_its_own_key_and_home(
    fake: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """The LocalBackend's spare (container/spares.py) started before the turn was known: the
    turn's model key and HOME reach Claude Code all the same, and the next turn's are its own."""
    backend = LocalBackend(spares=1)
    try:
        seen: list[tuple[str, bool]] = []
        for turn in ("first", "second", "third"):
            home = tmp_path / f"home-{turn}"
            home.mkdir()
            spec = live_spec(
                "claude",
                workspace,
                {**fake.env(key=f"sk-ant-{turn}"), "HOME": str(home)},
                role="owner",
                prompt="Say DONE.",
            )
            spare = backend.spares.pids()
            events = await collect(spec, backend)
            assert events[-1].kind == "final", events[-1]
            seen.append((fake.calls[-1].headers["x-api-key"], any(home.iterdir())))
            if turn != "first":
                # A spare was waiting, and ended with the turn: it ran it (nothing here differs
                # from its environment to dismiss it; test_spares.py checks the runner's pid).
                assert spare and not running(spare[0])
        assert seen == [(f"sk-ant-{t}", True) for t in ("first", "second", "third")]
    finally:
        await backend.close()
