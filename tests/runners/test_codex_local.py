"""The real Codex CLI driven by `python -m runners codex` through the real LocalBackend (as the
engine runs a turn), against the scripted fake Responses API on loopback."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from container.local import LocalBackend
from runners.protocol import IDLE_TIMEOUT, RunSpec
from tests.fakes.codex import needs_codex
from tests.fakes.live_runs import (
    clock_from_first_call,
    codex_home_env,
    collect,
    live_spec,
    processes_with_env,
)
from tests.fakes.responses_api import (
    FakeResponsesAPI,
    Usage,
    delayed,
    has_tool_output,
    instructions_contain,
    last_prompt_contains,
    shell,
    text,
)

pytestmark = [pytest.mark.codex, needs_codex, pytest.mark.timeout(120)]


@pytest.fixture
def fake() -> Any:
    with FakeResponsesAPI(default=text("DONE\n(default reply)")) as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "greet.py").write_text('print("hello")\n')
    return path


def run_spec(fake: FakeResponsesAPI, workspace: Path, home: Path, **request: Any) -> RunSpec:
    fields = {"role": "owner", "prompt": "Change the greeting.", **request}
    return live_spec("codex", workspace, {**fake.env(), **codex_home_env(home)}, **fields)


async def test_an_owner_turn_then_a_resumed_turn(
    fake: FakeResponsesAPI, workspace: Path, tmp_path: Path
) -> None:
    edit = "sed -i 's/hello/hello, world/' greet.py"
    owner = instructions_contain("ROLE: OWNER")
    fake.script(owner & ~has_tool_output(), [shell(edit)])
    fake.script(
        owner & has_tool_output(),
        [text("DONE\nThe greeting says hello, world.", usage=Usage(400, 50))],
    )
    spec = run_spec(
        fake, workspace, tmp_path / "home", system_prompt="ROLE: OWNER", read_only=False
    )
    events = await collect(spec)

    assert (workspace / "greet.py").read_text() == 'print("hello, world")\n'
    kinds = [e.kind for e in events]
    assert kinds[0] == "session" and kinds[-1] == "final" and "tool" in kinds
    assert events[-1].text.startswith("DONE")
    session = events[0].session_id

    fake.script(last_prompt_contains("And now?"), [text("DONE\nnothing else to do")])
    again = spec.model_copy(
        update={
            "request": spec.request.model_copy(
                update={"prompt": "And now?", "resume_session_id": session}
            )
        }
    )
    events = await collect(again)
    assert events[-1].kind == "final" and events[-1].text == "DONE\nnothing else to do"
    # The resumed conversation carries the earlier turn's command and its result.
    assert ("exec_command", {"cmd": edit}) in fake.calls[-1].function_calls()
    assert "exited with code 0" in fake.calls[-1].tool_output_text()
    fake.assert_all_consumed()


@pytest.mark.parametrize("sandbox", ["codex", "external"])
async def test_background_jobs_of_the_agent_end_with_the_turn(
    fake: FakeResponsesAPI, workspace: Path, tmp_path: Path, sandbox: str
) -> None:
    # Found by an environment marker, not by `$!`: Codex's own sandbox runs commands in a PID
    # namespace, where `$!` is not the host's pid.
    marker = f"TRIBUNAL_TEST_{uuid.uuid4().hex}"
    started = workspace / "started"
    fake.script(~has_tool_output(), [shell(f"sleep 300 >/dev/null 2>&1 & touch {started}")])
    fake.script(has_tool_output(), [text("DONE")])
    env = {marker: "1", "TRIBUNAL_CODEX_SANDBOX": sandbox}
    events = await collect(run_spec(fake, workspace, tmp_path / "home", read_only=False, env=env))
    assert events[-1].kind == "final" and started.exists()
    assert processes_with_env(marker) == [], "the agent's background job outlived the turn"


async def test_idle_timeout_stops_the_runner_and_codex(
    fake: FakeResponsesAPI, workspace: Path, tmp_path: Path
) -> None:
    marker = f"TRIBUNAL_TEST_{uuid.uuid4().hex}"
    fake.script(last_prompt_contains("Change"), [delayed(text("too late"), 60)])
    spec = run_spec(fake, workspace, tmp_path / "home", env={marker: "1"}).model_copy(
        update={"idle_timeout_s": 1.0}
    )
    # The idle second counts from the model call: Codex is mid-request when it fires.
    backend = LocalBackend(kill_grace_s=2.0, clock=clock_from_first_call(fake))
    events = await collect(spec, backend)
    assert events[-1].code == IDLE_TIMEOUT
    assert fake.calls, "Codex had asked the model before the timeout"
    assert processes_with_env(marker) == []
