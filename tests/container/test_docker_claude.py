"""The real Claude runner (`python -m runners claude`, Claude Code from the claude-agent-sdk wheel
installed in the image) in a container, against the fake Messages API on loopback
(network_mode="host"): one owner turn that edits /workspace through the Bash tool, then a
reviewer turn in the read-only container whose Bash write fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from container.docker_backend import RUNNER_COMMAND
from tests.container.conftest import MakeBackend, collect, spec
from tests.fakes.messages_api import (
    FakeMessagesAPI,
    has_tool_result,
    prompt_contains,
    text,
    tool_use,
)

pytestmark = [pytest.mark.engine, pytest.mark.claude, pytest.mark.timeout(240)]


async def test_claude_runner_in_a_container_edits_the_workspace(
    make_backend: MakeBackend, workspace: Path
) -> None:
    with FakeMessagesAPI(default=text("DONE")) as fake:
        fake.script(
            prompt_contains("write the result") & ~has_tool_result(),
            [tool_use("Bash", {"command": "echo edited-in-container > /workspace/result.txt"})],
        )
        fake.script(
            prompt_contains("write the result") & has_tool_result(),
            [text("DONE\nwrote result.txt")],
        )
        fake.script(
            prompt_contains("try to write") & ~has_tool_result(),
            [tool_use("Bash", {"command": "echo x > /workspace/reviewer.txt"})],
        )
        fake.script(
            prompt_contains("try to write") & has_tool_result(),
            [text("CHANGES_REQUESTED\ncould not write")],
        )
        backend = make_backend(command=RUNNER_COMMAND, mem_limit="2g")

        owner = await collect(
            backend, spec("Please write the result file.", workspace=workspace, env=fake.env())
        )
        kinds = [e.kind for e in owner]
        assert "error" not in kinds, owner
        [final] = [e for e in owner if e.kind == "final"]
        assert final.text.startswith("DONE")
        assert (workspace / "result.txt").read_text() == "edited-in-container\n"
        assert any(e.kind == "tool" and e.tool == "Bash" for e in owner)
        assert any(e.kind == "session" and e.session_id for e in owner)

        reviewer = await collect(
            backend,
            spec("Please try to write.", role="reviewer", workspace=workspace, env=fake.env()),
        )
        assert [e.text for e in reviewer if e.kind == "final"] == [
            "CHANGES_REQUESTED\ncould not write"
        ]
        # The Bash tool ran in the reviewer's container and hit the read-only mount.
        result_texts = [r.tool_result_text() for r in fake.calls if r.tool_results()]
        assert any("Read-only file system" in t for t in result_texts), result_texts
        assert not (workspace / "reviewer.txt").exists()
