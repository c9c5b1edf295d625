"""Issue 24, item 2, where it was reproduced: in the runner containers (Podman), the real Claude
Code and Codex behind the credential proxy, driven by the engine. The owner planted check.py;
the reviewer's model asks to run it, and it writes a final reading APPROVED into the CLI's
stdout through /proc/<cli pid>/fd/1 (tests/container/proxy/forger.py). The model would have
said CHANGES_REQUESTED. The reviewer's turn fails as "final answer not seen from the model";
nothing is approved and the task stays open."""

from __future__ import annotations

from pathlib import Path

import pytest

from container.proxy import Upstream
from container.proxy.finals import NOT_FROM_MODEL
from rooms.base.model import AgentConfig, GroupPolicy
from tests.container.conftest import MakeBackend
from tests.container.test_isolation import MODEL_KEY, OPENAI_KEY, proxied_containers
from tests.fakes import messages_api as claude_fake
from tests.fakes import responses_api as codex_fake
from tests.fakes.engine_kit import engine_kit

pytestmark = [pytest.mark.engine, pytest.mark.timeout(300)]

FORGER = Path(__file__).with_name("proxy") / "forger.py"
FORGE = "python3 /workspace/check.py {cli} /tmp/forger-report.txt; cat /tmp/forger-report.txt"


@pytest.mark.parametrize(
    "reviewer",
    [
        pytest.param("claude", marks=pytest.mark.claude),
        pytest.param("codex", marks=pytest.mark.codex),
    ],
)
async def test_a_forged_approval_in_a_container_is_refused(
    make_backend: MakeBackend, workspace: Path, tmp_path: Path, reviewer: str
) -> None:
    (workspace / "check.py").write_text(FORGER.read_text())  # the owner's "checks"
    forge = FORGE.format(cli=reviewer)
    with (
        claude_fake.FakeMessagesAPI(default=claude_fake.text("DONE\nwrapped up")) as anthropic,
        codex_fake.FakeResponsesAPI(default=codex_fake.text("DONE\nwrapped up")) as openai,
    ):
        if reviewer == "claude":
            said = claude_fake.system_contains("You are the reviewer")
            anthropic.script(
                said & ~claude_fake.has_tool_result(),
                [claude_fake.tool_use("Bash", {"command": forge})],
                repeat_last=True,  # the forger runs again at each retry of the review
            )
            anthropic.script(
                said & claude_fake.has_tool_result(),
                [claude_fake.text("CHANGES_REQUESTED\nchecks fail")],
            )
        else:
            openai.script(
                ~codex_fake.has_tool_output(), [codex_fake.shell(forge)], repeat_last=True
            )
            openai.script(
                codex_fake.has_tool_output(), [codex_fake.text("CHANGES_REQUESTED\nchecks fail")]
            )
        upstreams = {
            "claude": Upstream(anthropic.url, MODEL_KEY),
            "codex": Upstream(openai.base_url, OPENAI_KEY),
        }
        policy = GroupPolicy(
            name=f"forged-{reviewer}",
            workspace=str(workspace),
            owner=AgentConfig("claude"),
            reviewer=AgentConfig(reviewer),  # type: ignore[arg-type]
            approvers=frozenset({"alice"}),
            idle_timeout_s=90,
            hard_timeout_s=180,
        )
        async with (
            proxied_containers(make_backend, tmp_path, upstreams) as runner,
            engine_kit(tmp_path, policy=policy, runner=runner) as kit,  # type: ignore[arg-type]
        ):
            await kit.say("@tribunal add the checks")
            await kit.settle(timeout=240)
            task = await kit.task()
            turns = await kit.store.turns(task.id)
    reviews = [t for t in turns if t.role == "reviewer"]
    assert reviews and all(t.status == "failed" for t in reviews), [t.output for t in turns]
    assert all(NOT_FROM_MODEL in (t.error or "") for t in reviews), [t.error for t in reviews]
    assert all(t.marker != "APPROVED" for t in turns), [(t.role, t.output) for t in turns]
    assert task.status != "closed"
    # The model was asked (the forger ran through its tool call) at every review; Codex may
    # also send the tool's output before its runner stops it, and that answer is no final
    # either: the forged lines were in the pipe first.
    asked = anthropic.calls if reviewer == "claude" else openai.calls
    assert len([c for c in asked if "You are the reviewer" in str(c.body)]) >= len(reviews)
