"""A whole owner/reviewer task on the Docker backend as the bot runs it by default: containers
with no network (network_mode "none"), the model reached only through the bot's credential
proxy, the real Claude Code in the runner image against the fake Messages API.

Inside the containers no real key appears: not in the containers' or any process's environment
(/proc/*/environ, read by the agents' own shells), not in any file they can write; the agents'
shells cannot reach the fake API directly; every request the fake saw came through the proxy
with the real key; and each run token stops working when its turn ends.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app import open_app
from bot.settings import load_settings
from container.docker_backend import RUNNER_COMMAND
from container.docker_pool import PROXY_MOUNT
from container.proxy import CredentialProxy, Upstream
from container.proxy.runner import ProxiedRunner, ProxyEndpoint
from rooms.base.model import AgentConfig, GroupPolicy, Inbound, RoomRef, Thresholds
from runners.protocol import BUDGET
from tests.container.conftest import MakeBackend
from tests.container.test_bot_docker import (  # noqa: F401  (fixtures)
    _containers,
    _tool_outputs,
    bot_env,
    instance,
)
from tests.fakes import messages_api as claude_fake
from tests.fakes import responses_api as codex_fake
from tests.fakes.engine_kit import engine_kit
from tests.fakes.messages_api import FakeMessagesAPI, system_contains, text, tool_use
from tests.fakes.platform import RecordingAdapter

pytestmark = [pytest.mark.engine, pytest.mark.claude, pytest.mark.timeout(300)]
MODEL_KEY = "sk-ant-isolation-REAL-key-0123456789"
OPENAI_KEY = "sk-openai-isolation-REAL-key-9876543210"


def _leak_check(then: str) -> str:
    """A shell command that counts the real key in every process's environment and in the
    writable files, and shows the run's token; the key itself is never in the command (it is
    decoded at run time, so a transcript of the command does not hold it either)."""
    encoded = base64.b64encode(MODEL_KEY.encode()).decode()
    return (
        f"k=$(echo {encoded} | base64 -d); "
        'echo "environ-with-key:$(cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" '
        '| grep -cF "$k")"; '
        'echo "environ-with-token:$(for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < $f '
        '2>/dev/null | grep -q "^ANTHROPIC_API_KEY=tribunal-run-" && echo $f; done | wc -l)"; '
        'echo "files-with-key:$(grep -rlF "$k" /home /tmp /workspace /run 2>/dev/null | wc -l)"; '
        'echo "token:$ANTHROPIC_API_KEY"; '
        f"{then}"
    )


def _direct_check(fake_url: str) -> str:
    host, port = fake_url.removeprefix("http://").split(":")
    return (
        'python3 -c "import socket\n'
        "try:\n"
        f"    socket.create_connection(('{host}', {port}), timeout=2); print('direct:open')\n"
        "except OSError as e:\n"
        "    print('direct:' + type(e).__name__)\""
    )


async def _status_with(socket_path: Path, token: str) -> int:
    connector = aiohttp.UnixConnector(path=str(socket_path))
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.post(
            "http://proxy/v1/messages",
            headers={"x-api-key": token},
            json={"model": "m", "max_tokens": 5, "messages": []},
        ) as answer,
    ):
        return answer.status


def _field(output: str, name: str) -> str:
    for line in output.splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {name} in {output!r}")


async def test_a_task_through_the_proxy_with_no_network(
    bot_env: dict[str, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    docker_client: Any,
    instance: str,  # noqa: F811
    workspace: Path,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    monkeypatch.delenv("TRIBUNAL_DOCKER__NETWORK_MODE")  # the default: none
    monkeypatch.setenv("TRIBUNAL_CONSOLE__WORKSPACE", str(workspace))
    with FakeMessagesAPI(default=text("DONE\nwrapped up")) as fake:
        owner = _leak_check("echo hi > /workspace/hello.txt")
        reviewer = _leak_check(_direct_check(fake.url))
        fake.script(
            system_contains("You are the owner"),
            [tool_use("Bash", {"command": owner}), text("DONE\ncreated hello.txt")],
        )
        fake.script(
            system_contains("You are the reviewer"),
            [tool_use("Bash", {"command": reviewer}), text("APPROVED\nlooks right")],
        )
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", MODEL_KEY)
        settings = load_settings(env_file=None)
        assert settings.docker.network_mode == "none"
        room = RoomRef("console", "local", "1")
        warn = io.StringIO()
        async with open_app(settings, RecordingAdapter("console"), warn=warn) as app:
            await app.engine.handle(
                Inbound(room, "alice", "create hello.txt saying hi", "ev-1", mentions_bot=True)
            )
            async with asyncio.timeout(240):
                await app.engine.idle()
            task = await app.store.latest_task_in(room)
            assert task is not None and task.status == "closed"
            turns = await app.store.turns(task.id)
            assert [(t.role, t.status, t.marker) for t in turns] == [
                ("owner", "done", "DONE"),
                ("reviewer", "done", "APPROVED"),
                ("owner", "done", "DONE"),
            ]
            for container in _containers(docker_client, instance):
                assert container.attrs["HostConfig"]["NetworkMode"] == "none"
                assert MODEL_KEY not in "\n".join(container.attrs["Config"]["Env"] or [])

            shells = _tool_outputs(fake)
            assert len(shells) == 2, shells
            tokens = []
            for shell in shells:
                assert MODEL_KEY not in shell
                assert _field(shell, "environ-with-key") == "0", shell
                # The check reads other processes' environment: the runner's and Claude Code's
                # hold the run token, and it finds them.
                assert int(_field(shell, "environ-with-token")) >= 2, shell
                assert _field(shell, "files-with-key") == "0", shell
                tokens.append(_field(shell, "token"))
            assert _field(shells[1], "direct") in ("ConnectionRefusedError", "OSError"), shells
            assert len(set(tokens)) == 2 and all(t.startswith("tribunal-run-") for t in tokens)
            # The turns are over: their tokens no longer open the proxy (the bot still runs).
            socket_path = Path(bot_env["TRIBUNAL_DATA"]) / "proxy" / "proxy.sock"
            for token in tokens:
                assert await _status_with(socket_path, token) == 401
        assert warn.getvalue() == ""
        assert (workspace / "hello.txt").read_text() == "hi\n"
        assert {c.headers.get("x-api-key") for c in fake.calls} == {MODEL_KEY}
        assert not socket_path.exists()  # the proxy stopped with the bot


# -- the engine on proxied containers: a mixed pair, and a budget reached mid-task -------------


@contextlib.asynccontextmanager
async def proxied_containers(
    make_backend: MakeBackend, tmp_path: Path, upstreams: dict[str, Upstream]
) -> AsyncIterator[ProxiedRunner]:
    folder = tmp_path / "proxy"
    folder.mkdir()
    os.chmod(folder, 0o711)
    proxy = CredentialProxy(upstreams)  # type: ignore[arg-type]
    await proxy.listen_unix(folder / "proxy.sock")
    backend = make_backend(
        command=RUNNER_COMMAND, mem_limit="2g", network_mode="none", proxy_socket_dir=str(folder)
    )
    try:
        yield ProxiedRunner(backend, proxy, ProxyEndpoint(socket=f"{PROXY_MOUNT}/proxy.sock"))
    finally:
        await proxy.close()


@pytest.mark.codex
async def test_a_codex_owner_and_a_claude_reviewer_through_the_proxy(
    make_backend: MakeBackend, workspace: Path, tmp_path: Path
) -> None:
    with (
        claude_fake.FakeMessagesAPI(default=claude_fake.text("APPROVED\nok")) as anthropic,
        codex_fake.FakeResponsesAPI(default=codex_fake.text("DONE\nwrapped up")) as openai,
    ):
        openai.script(
            codex_fake.last_prompt_contains("hello.txt") & ~codex_fake.has_tool_output(),
            [codex_fake.shell("echo hi > /workspace/hello.txt")],
        )
        openai.script(codex_fake.has_tool_output(), [codex_fake.text("DONE\ncreated hello.txt")])
        upstreams = {
            "claude": Upstream(anthropic.url, MODEL_KEY),
            "codex": Upstream(openai.base_url, OPENAI_KEY),
        }
        policy = GroupPolicy(
            name="proxied-mixed",
            workspace=str(workspace),
            owner=AgentConfig("codex"),
            reviewer=AgentConfig("claude"),
            approvers=frozenset({"alice"}),
            idle_timeout_s=90,
            hard_timeout_s=180,
        )
        async with (
            proxied_containers(make_backend, tmp_path, upstreams) as runner,
            engine_kit(tmp_path, policy=policy, runner=runner) as kit,  # type: ignore[arg-type]
        ):
            await kit.say("@tribunal create hello.txt saying hi")
            await kit.settle(timeout=240)
            task = await kit.task()
            turns = await kit.store.turns(task.id)
            assert [(t.role, t.status, t.marker) for t in turns] == [
                ("owner", "done", "DONE"),
                ("reviewer", "done", "APPROVED"),
                ("owner", "done", "DONE"),
            ], [t.output for t in turns]
            assert task.status == "closed"
            # The task is charged what the APIs reported (each fake answer: 100 in, 20 out).
            assert task.tokens == 120 * (len(anthropic.calls) + len(openai.calls))
        assert (workspace / "hello.txt").read_text() == "hi\n"
        assert openai.calls and {c.headers["authorization"] for c in openai.calls} == {
            f"Bearer {OPENAI_KEY}"
        }
        assert anthropic.calls and {c.headers["x-api-key"] for c in anthropic.calls} == {MODEL_KEY}


async def test_a_budget_reached_mid_task_escalates_with_the_reason(
    make_backend: MakeBackend, workspace: Path, tmp_path: Path
) -> None:
    """1,000 tokens: the owner's first answer (a tool call) reports 1,500; the request that
    carries the tool's result is refused at the proxy, the turn ends at once, and the task asks
    its approvers, charged exactly what the API reported."""
    with claude_fake.FakeMessagesAPI(default=claude_fake.text("DONE\nnever")) as anthropic:
        anthropic.script(
            claude_fake.any_request(),
            [
                claude_fake.tool_use(
                    "Bash", {"command": "echo hi"}, usage=claude_fake.Usage(1000, 500)
                )
            ],
        )
        policy = GroupPolicy(
            name="proxied-budget",
            workspace=str(workspace),
            approvers=frozenset({"alice"}),
            thresholds=Thresholds(max_tokens=1000),
            idle_timeout_s=90,
            hard_timeout_s=180,
        )
        upstreams = {"claude": Upstream(anthropic.url, MODEL_KEY)}
        async with (
            proxied_containers(make_backend, tmp_path, upstreams) as runner,
            engine_kit(tmp_path, policy=policy, runner=runner) as kit,  # type: ignore[arg-type]
        ):
            await kit.say("@tribunal create hello.txt saying hi")
            await kit.settle(timeout=240)
            task = await kit.task()
            assert task.status == "waiting_human"
            turns = await kit.store.turns(task.id)
            assert [(t.role, t.status) for t in turns] == [("owner", "failed")]
            assert turns[0].error is not None and "token budget is spent" in turns[0].error
            esc = await kit.store.open_escalation(task.id)
            assert esc is not None and esc.kind == "ceiling"
            assert (
                f"failed ({BUDGET}): the task's token budget is spent: this turn used 1,500 of "
                "the 1,000" in esc.reason
            )
            assert task.tokens == 1500  # what the API reported, not what the runner said
        assert len(anthropic.calls) == 1
