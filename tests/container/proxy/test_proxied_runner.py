"""ProxiedRunner around the real LocalBackend: each run gets a fresh run token instead of the
keys, which stops working when the run ends; the proxy's usage replaces the runner's; a spent
budget ends the turn at once with code `budget`. With the real Claude Code and Codex CLIs
against the fake APIs, also through the loopback forwarder to the proxy's unix socket
(runners/_forward.py), as the runner containers reach it."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from container.local import LocalBackend
from container.proxy import CredentialProxy
from container.proxy.finals import NOT_FROM_MODEL
from container.proxy.runner import ProxiedRunner, ProxyEndpoint
from runners.protocol import BUDGET, UNVERIFIED, RunEvent, RunSpec
from tests.container.proxy.conftest import ANTHROPIC_KEY, OPENAI_KEY
from tests.fakes import bad_runners
from tests.fakes import messages_api as m
from tests.fakes import responses_api as r
from tests.fakes.claude_cli import requires_claude
from tests.fakes.codex import needs_codex
from tests.fakes.live_runs import codex_home_env, live_spec, only
from tests.fakes.messages_api import FakeMessagesAPI
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[3]
PATH_FIRST = "import runpy, sys; sys.path.insert(0, sys.argv.pop(1))"
RUN_RUNNERS = "runpy.run_module('runners', run_name='__main__', alter_sys=True)"


async def collect(runner: ProxiedRunner, spec: RunSpec) -> list[RunEvent]:
    return [event async for event in runner.run(spec)]


def dumped_env(events: list[RunEvent]) -> dict[str, Any]:
    """The environment env_dump saw (its progress event): its final is refused, since it asked
    no model (container/proxy/finals.py)."""
    (answer,) = [e for e in events if e.kind in ("final", "error")]
    assert answer.code == UNVERIFIED and NOT_FROM_MODEL in answer.text, answer
    env: dict[str, Any] = json.loads(only(events, "progress")[0].text)["env"]
    return env


def proxied(proxy: CredentialProxy, backend: LocalBackend | None = None) -> ProxiedRunner:
    assert proxy.tcp_url is not None
    return ProxiedRunner(backend or LocalBackend(), proxy, ProxyEndpoint(url=proxy.tcp_url))


@pytest.fixture
async def socket_proxy(proxy: CredentialProxy, tmp_path: Path) -> AsyncIterator[Path]:
    path = tmp_path / "proxy.sock"
    await proxy.listen_unix(path)
    yield path


async def test_the_run_gets_a_token_not_the_key(proxy: CredentialProxy, tmp_path: Path) -> None:
    runner = proxied(proxy, LocalBackend(command=bad_runners.command("env_dump")))
    real = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_API_KEY": OPENAI_KEY}
    spec = live_spec("claude", tmp_path, real, role="owner", prompt="p")
    events = await collect(runner, spec)
    env = dumped_env(events)
    assert ANTHROPIC_KEY not in str(env) and OPENAI_KEY not in str(env)
    assert env["ANTHROPIC_API_KEY"].startswith("tribunal-run-")
    assert env["ANTHROPIC_BASE_URL"] == proxy.tcp_url
    assert "OPENAI_API_KEY" not in env
    # The token is dead now: the run ended.
    assert len(proxy.grants) == 0
    client = anthropic.AsyncAnthropic(
        api_key=env["ANTHROPIC_API_KEY"], base_url=proxy.tcp_url, max_retries=0
    )
    with pytest.raises(anthropic.AuthenticationError):
        await client.messages.create(model="m", max_tokens=5, messages=[])


async def test_each_run_gets_a_fresh_token(proxy: CredentialProxy, tmp_path: Path) -> None:
    runner = proxied(proxy, LocalBackend(command=bad_runners.command("env_dump")))
    tokens = set()
    for agent in ("codex", "codex", "claude"):
        events = await collect(runner, live_spec(agent, tmp_path, {}, role="owner", prompt="p"))
        env = dumped_env(events)
        tokens.add(env.get("TRIBUNAL_CODEX_API_KEY") or env["ANTHROPIC_API_KEY"])
    assert len(tokens) == 3


@requires_claude
async def test_claude_code_through_the_proxy(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, tmp_path: Path
) -> None:
    messages_api.script(m.any_request(), [m.text("DONE\nvia proxy", usage=m.Usage(321, 45))])
    spec = live_spec(
        "claude", tmp_path, {"HOME": str(tmp_path), **messages_api.env(ANTHROPIC_KEY)},
        role="owner", prompt="go",
    )  # fmt: skip
    events = await collect(proxied(proxy), spec)
    assert events[-1].kind == "final" and "via proxy" in events[-1].text
    (usage,) = only(events, "usage")  # the proxy's count, the runner's own dropped
    assert (usage.input_tokens, usage.output_tokens) == (321, 45)
    assert all(c.headers["x-api-key"] == ANTHROPIC_KEY for c in messages_api.calls)
    assert len(proxy.grants) == 0


@requires_claude
async def test_claude_code_through_the_socket_forwarder(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, socket_proxy: Path, tmp_path: Path
) -> None:
    """As in a container: no URL is given, only the socket; the runner forwards a loopback
    port to it and points Claude Code there."""
    messages_api.script(m.any_request(), [m.text("DONE\nvia socket", usage=m.Usage(10, 2))])
    runner = ProxiedRunner(LocalBackend(), proxy, ProxyEndpoint(socket=str(socket_proxy)))
    spec = live_spec("claude", tmp_path, {"HOME": str(tmp_path)}, role="owner", prompt="go")
    events = await collect(runner, spec)
    assert events[-1].kind == "final" and "via socket" in events[-1].text
    assert [(u.input_tokens, u.output_tokens) for u in only(events, "usage")] == [(10, 2)]


@needs_codex
async def test_codex_through_the_socket_forwarder(
    proxy: CredentialProxy, responses_api: FakeResponsesAPI, socket_proxy: Path, tmp_path: Path
) -> None:
    responses_api.script(r.any_request(), [r.text("DONE\ncodex via socket", usage=r.Usage(77, 7))])
    runner = ProxiedRunner(LocalBackend(), proxy, ProxyEndpoint(socket=str(socket_proxy)))
    env = {**codex_home_env(tmp_path / "home"), "TRIBUNAL_CODEX_SANDBOX": "external"}
    spec = live_spec("codex", tmp_path, env, role="owner", prompt="go")
    events = await collect(runner, spec)
    assert events[-1].kind == "final" and "codex via socket" in events[-1].text
    assert [(u.input_tokens, u.output_tokens) for u in only(events, "usage")] == [(77, 7)]
    assert all(c.headers["authorization"] == f"Bearer {OPENAI_KEY}" for c in responses_api.calls)


@needs_codex
@pytest.mark.parametrize("server_tools", [False, True])
async def test_codex_with_a_known_model_asks_for_no_hosted_tool(
    proxy: CredentialProxy, responses_api: FakeResponsesAPI, tmp_path: Path, server_tools: bool
) -> None:
    """With a model it knows, Codex 0.171 offers the model its hosted web search (the proxy
    would refuse the request); the runner turns it off, unless the group allows server tools."""
    responses_api.script(r.any_request(), [r.text("DONE\nno web", usage=r.Usage(5, 1))])
    groups = frozenset({"g"}) if server_tools else frozenset()
    assert proxy.tcp_url is not None
    endpoint = ProxyEndpoint(url=proxy.tcp_url)
    # This checkout's runners, wherever the virtualenv's editable install points.
    this_checkout = [sys.executable, "-P", "-c", f"{PATH_FIRST}; {RUN_RUNNERS}", str(ROOT)]
    backend = LocalBackend(command=this_checkout)
    runner = ProxiedRunner(backend, proxy, endpoint, server_tools_groups=groups)
    env = {**codex_home_env(tmp_path / "home"), "TRIBUNAL_CODEX_SANDBOX": "external"}
    spec = live_spec("codex", tmp_path, env, role="owner", prompt="go", model="gpt-5.1-codex")
    events = await collect(runner, spec)
    assert events[-1].kind == "final" and "no web" in events[-1].text
    (call,) = responses_api.calls
    tool_types = {t.get("type") for t in call.body.get("tools", [])}
    assert "function" in tool_types
    assert ("web_search" in tool_types) is server_tools


@requires_claude
async def test_a_spent_budget_ends_the_turn_at_once(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, tmp_path: Path
) -> None:
    """The first answer (a tool call) spends 1,500 of 1,000 tokens left; the request with its
    result is refused, and the turn ends with `budget` and the usage the API reported."""
    messages_api.script(
        m.any_request(),
        [m.tool_use("Bash", {"command": "echo hi"}, usage=m.Usage(1000, 500))],
        repeat_last=True,
    )
    spec = live_spec(
        "claude", tmp_path, {"HOME": str(tmp_path)}, role="owner", prompt="go"
    ).model_copy(update={"tokens_left": 1000})
    events = await collect(proxied(proxy), spec)
    assert events[-1].kind == "error" and events[-1].code == BUDGET
    assert "token budget is spent" in events[-1].text
    assert [(u.input_tokens, u.output_tokens) for u in only(events, "usage")] == [(1000, 500)]
    assert len(messages_api.calls) == 1


async def test_a_command_run_gets_no_grant_and_no_model_variable(
    proxy: CredentialProxy, socket_proxy: Path, tmp_path: Path
) -> None:
    """The engine's checks (agent `command`) reach no model: no token is issued, no proxy
    address or socket is handed over, and the keys a run was offered are taken away."""
    issued: list[str] = []
    issue = proxy.issue

    def counting(*args: Any, **kw: Any) -> Any:
        issued.append(str(args[0]))
        return issue(*args, **kw)

    proxy.issue = counting  # type: ignore[method-assign]
    runner = ProxiedRunner(
        LocalBackend(command=bad_runners.command("env_dump")),
        proxy,
        ProxyEndpoint(url=proxy.tcp_url, socket=str(socket_proxy)),
    )
    offered = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9"}
    spec = live_spec("command", tmp_path, offered, role="executor", prompt="checks")
    events = await collect(runner, spec)
    env = only(events, "final")[0].structured["env"]  # type: ignore[index]
    assert issued == []
    assert ANTHROPIC_KEY not in str(env) and "tribunal-run-" not in str(env)
    assert not {"ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "TRIBUNAL_PROXY_SOCKET"} & set(env)
