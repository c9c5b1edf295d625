"""The whole tribunal on containers: the real Engine drives a task through the DockerBackend, with
the real Claude and Codex runners in the runner image against the fake Messages and Responses
APIs on loopback. Mixed pairs both ways (owner claude / reviewer codex, and the reverse): the
owner edits /workspace with its shell tool and says DONE, the reviewer (read-only mount) says
APPROVED, the owner's wrap-up turn closes the task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from container.docker_backend import RUNNER_COMMAND
from rooms.base.model import AgentConfig, GroupPolicy
from tests.container.conftest import MakeBackend
from tests.fakes import messages_api as claude_fake
from tests.fakes import responses_api as codex_fake
from tests.fakes.engine_kit import engine_kit

pytestmark = [pytest.mark.engine, pytest.mark.claude, pytest.mark.codex, pytest.mark.timeout(300)]

TASK = "@tribunal create hello.txt saying hi"


def _claude_owner(fake: claude_fake.FakeMessagesAPI) -> None:
    fake.script(
        claude_fake.prompt_contains("hello.txt") & ~claude_fake.has_tool_result(),
        [claude_fake.tool_use("Bash", {"command": "echo hi > /workspace/hello.txt"})],
    )
    fake.script(claude_fake.has_tool_result(), [claude_fake.text("DONE\ncreated hello.txt")])


def _codex_owner(fake: codex_fake.FakeResponsesAPI) -> None:
    fake.script(
        codex_fake.last_prompt_contains("hello.txt") & ~codex_fake.has_tool_output(),
        [codex_fake.shell("echo hi > /workspace/hello.txt")],
    )
    fake.script(codex_fake.has_tool_output(), [codex_fake.text("DONE\ncreated hello.txt")])


@pytest.mark.parametrize("owner, reviewer", [("claude", "codex"), ("codex", "claude")])
async def test_mixed_pair_reaches_approved_in_containers(
    owner: str, reviewer: str, make_backend: MakeBackend, workspace: Path, tmp_path: Path
) -> None:
    # Each fake answers its own agent: DONE for an owner's wrap-up, APPROVED for a reviewer.
    with (
        claude_fake.FakeMessagesAPI(
            default=claude_fake.text("DONE\nwrapped up" if owner == "claude" else "APPROVED\nok")
        ) as anthropic,
        codex_fake.FakeResponsesAPI(
            default=codex_fake.text("DONE\nwrapped up" if owner == "codex" else "APPROVED\nok")
        ) as openai,
    ):
        if owner == "claude":
            _claude_owner(anthropic)
        else:
            _codex_owner(openai)
        # Model credentials come from the backend (the engine's RunSpec.env carries labels only).
        backend = make_backend(
            command=RUNNER_COMMAND, mem_limit="2g", env={**anthropic.env(), **openai.env()}
        )
        policy = GroupPolicy(
            name=f"mixed-{owner}-{reviewer}",
            workspace=str(workspace),
            owner=AgentConfig(owner),  # type: ignore[arg-type]
            reviewer=AgentConfig(reviewer),  # type: ignore[arg-type]
            approvers=frozenset({"alice"}),
            idle_timeout_s=90,
            hard_timeout_s=180,
        )
        runner: Any = backend
        async with engine_kit(tmp_path, policy=policy, runner=runner) as kit:
            await kit.say(TASK)
            await kit.settle(timeout=240)
            task = await kit.task()
            turns = await kit.store.turns(task.id)
            summary = [(t.role, t.status, t.marker) for t in turns]
            assert summary == [
                ("owner", "done", "DONE"),
                ("reviewer", "done", "APPROVED"),
                ("owner", "done", "DONE"),
            ], [t.output for t in turns]
            assert task.status == "closed"
        assert (workspace / "hello.txt").read_text() == "hi\n"
        # Each agent type answered its own role(s) and nothing else.
        assert anthropic.calls and openai.calls
