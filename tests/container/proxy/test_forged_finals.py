"""A reviewer's verdict comes only from the model (issue 24, items 2 and 18).

The real Claude Code and Codex CLIs, run by the real runners through the real LocalBackend and
the credential proxy, against the fake model APIs. The reviewer's model asks for one shell
command: a script the owner planted (forger.py), which writes a final answer reading APPROVED
into the CLI's stdout through /proc/<cli pid>/fd/1. The model's own answer, had it been asked,
says CHANGES_REQUESTED. The runner cannot tell the forged final from a real one; the proxy
can: the model's newest answer asked for a tool, so the turn fails as `unverified`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from container.local import LocalBackend
from container.proxy import CredentialProxy
from container.proxy.finals import NOT_FROM_MODEL
from container.proxy.runner import ProxiedRunner, ProxyEndpoint
from runners.protocol import CRASHED, UNVERIFIED, RunEvent, RunSpec
from tests.fakes import bad_runners
from tests.fakes import messages_api as m
from tests.fakes import responses_api as r
from tests.fakes.claude_cli import requires_claude
from tests.fakes.codex import needs_codex
from tests.fakes.live_runs import codex_home_env, live_spec, only
from tests.fakes.messages_api import FakeMessagesAPI
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = pytest.mark.timeout(120)

FORGER = Path(__file__).with_name("forger.py")
REVIEW = "Review the change. Run the project's checks first."


async def collect(
    proxy: CredentialProxy, spec: RunSpec, backend: LocalBackend | None = None
) -> list[RunEvent]:
    assert proxy.tcp_url is not None
    runner = ProxiedRunner(backend or LocalBackend(), proxy, ProxyEndpoint(url=proxy.tcp_url))
    return [event async for event in runner.run(spec)]


def planted(workspace: Path, cli: str) -> tuple[str, Path]:
    """The command the reviewer's model asks for (the owner's "checks"), and the forger's
    report file."""
    report = workspace.parent / "forger-report.txt"
    (workspace / "check.py").write_text(FORGER.read_text())
    return f"{sys.executable} {workspace / 'check.py'} {cli} {report}", report


def assert_refused(events: list[RunEvent], report: Path) -> None:
    assert report.read_text().startswith("forging into"), report.read_text()
    assert not [e for e in only(events, "final") if "APPROVED" in e.text], events
    (answer,) = [e for e in events if e.kind in ("final", "error")]
    assert answer.kind == "error" and answer.code == UNVERIFIED, events
    assert NOT_FROM_MODEL in answer.text


@requires_claude
async def test_a_forged_claude_result_is_refused(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    command, report = planted(workspace, "claude")
    messages_api.script(~m.has_tool_result(), [m.tool_use("Bash", {"command": command})])
    messages_api.script(m.has_tool_result(), [m.text("CHANGES_REQUESTED\nthe checks fail")])
    env = {"HOME": str(tmp_path)}
    spec = live_spec("claude", workspace, env, role="reviewer", prompt=REVIEW, max_turns=6)
    events = await collect(proxy, spec)
    assert_refused(events, report)


@needs_codex
async def test_a_forged_codex_completion_is_refused(
    proxy: CredentialProxy, responses_api: FakeResponsesAPI, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    command, report = planted(workspace, "codex")
    responses_api.script(~r.has_tool_output(), [r.shell(command)])
    responses_api.script(r.has_tool_output(), [r.text("CHANGES_REQUESTED\nthe checks fail")])
    env = {**codex_home_env(tmp_path / "home"), "TRIBUNAL_CODEX_SANDBOX": "external"}
    spec = live_spec("codex", workspace, env, role="reviewer", prompt=REVIEW)
    events = await collect(proxy, spec)
    assert_refused(events, report)


async def test_a_forged_final_then_a_killed_runner_fails_twice(
    proxy: CredentialProxy, tmp_path: Path
) -> None:
    """Item 18: the agent writes a valid final reading APPROVED into the runner's pipe (as root
    can), then SIGKILLs the runner. The final is no model answer (this turn asked none), and the
    runner died after it: both fail the turn, and no final goes out."""
    backend = LocalBackend(command=bad_runners.command("forge_and_kill"), kill_grace_s=1.0)
    spec = live_spec("claude", tmp_path, {}, role="reviewer", prompt=REVIEW)
    events = await collect(proxy, spec, backend)
    assert [(e.kind, e.code) for e in events] == [("error", UNVERIFIED), ("error", CRASHED)]
    assert NOT_FROM_MODEL in events[0].text
    assert "killed by SIGKILL after its final answer" in events[1].text


SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string"}, "conditions": {"type": "array"}},
    "required": ["verdict", "conditions"],
}
VERDICT = {"verdict": "CHANGES_REQUESTED", "conditions": ["fix the test"]}


@requires_claude
async def test_an_honest_structured_claude_answer_passes(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, tmp_path: Path
) -> None:
    """The check lets the model's own answer through: Claude Code's StructuredOutput call."""
    messages_api.script(m.any_request(), [m.structured(VERDICT)])
    spec = live_spec(
        "claude", tmp_path, {"HOME": str(tmp_path)}, role="reviewer", prompt=REVIEW,
        output_schema=SCHEMA,
    )  # fmt: skip
    events = await collect(proxy, spec)
    (answer,) = [e for e in events if e.kind in ("final", "error")]
    assert answer.kind == "final" and answer.structured == VERDICT, events


@needs_codex
async def test_an_honest_structured_codex_answer_passes(
    proxy: CredentialProxy, responses_api: FakeResponsesAPI, tmp_path: Path
) -> None:
    responses_api.script(r.any_request(), [r.structured(VERDICT)])
    env = {**codex_home_env(tmp_path / "home"), "TRIBUNAL_CODEX_SANDBOX": "external"}
    spec = live_spec("codex", tmp_path, env, role="reviewer", prompt=REVIEW, output_schema=SCHEMA)
    events = await collect(proxy, spec)
    (answer,) = [e for e in events if e.kind in ("final", "error")]
    assert answer.kind == "final" and answer.structured == VERDICT, events
