"""ProxiedRunner: a Runner (rooms port) that gives each turn a run token instead of model keys.

Around every run of the inner backend (local or Docker):
- a grant is issued for the spec's agent type, with the task's budget that the spec carries
  (`RunSpec.tokens_left`, `RunRequest.max_budget_usd`), and revoked when the run ends, however
  it ends (its token stops working, its requests in flight are cut);
- the run's environment loses every model key and base URL it had and gets the token and the
  proxy's address instead (`ProxyEndpoint`): a TCP URL for runners on this host, or the socket
  bind-mounted into the containers, which the runner forwards to (runners/_forward.py);
- the runner's own `usage` events are dropped: the proxy's count, read from the API's answers,
  is what the task is charged, reported as a `usage` event (what was spent since the last one)
  ahead of the next event of the run, and once more at the end for anything spent after it;
- a group in `server_tools_groups` (its `server_tools = true` setting) gets a grant that lets
  the model API's server tools through (container/proxy/policy.py), and its Codex runs are told
  to keep web search on (TRIBUNAL_SERVER_TOOLS=1, runners/codex.py); no other run has it;
- a request refused for the budget ends the turn at once (the inner run is closed, which kills
  it) with an `error` event of code `budget` and the proxy's reason;
- the runner's `final` is replaced by the model's newest answer as the proxy relayed it, or by
  an `error` of code `unverified` when the two differ (container/proxy/finals.py): the agent's
  tools can write into the CLI's output, but not into what the model said.

A `command` run (the engine's checks, runners/command.py) reaches no model: it gets no grant,
no token and no proxy address, and loses every model variable all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from container.engine_set import engine_notes
from container.proxy.finals import checked_final
from container.proxy.grants import Grant, Spent
from container.proxy.server import CredentialProxy
from runners.protocol import BUDGET, RunEvent, RunSpec, error

# Removed from every proxied run's environment: the real keys and the addresses of the real APIs.
MODEL_VARIABLES = frozenset(
    {
        "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY",
        "OPENAI_BASE_URL", "CODEX_API_KEY", "TRIBUNAL_CODEX_API_KEY", "TRIBUNAL_CODEX_BASE_URL",
    }
)  # fmt: skip
SOCKET_VARIABLE = "TRIBUNAL_PROXY_SOCKET"  # runners/_forward.py reads it
SERVER_TOOLS_VARIABLE = "TRIBUNAL_SERVER_TOOLS"  # runners/codex.py reads it


class Runner(Protocol):
    """What rooms.base.ports.Runner is (container/ does not import rooms)."""

    def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]: ...


@dataclass(frozen=True)
class ProxyEndpoint:
    """How a runner reaches the proxy: `url` (runners on this host) or `socket` (the path of the
    proxy's socket as mounted inside the runner containers)."""

    url: str | None = None
    socket: str | None = None

    def env(self, grant: Grant) -> dict[str, str]:
        env: dict[str, str] = {}
        if self.socket is not None:
            env[SOCKET_VARIABLE] = self.socket
        if grant.agent == "claude":
            env["ANTHROPIC_API_KEY"] = grant.token
            if self.url is not None:
                env["ANTHROPIC_BASE_URL"] = self.url
        else:
            env["TRIBUNAL_CODEX_API_KEY"] = grant.token
            if self.url is not None:
                env["TRIBUNAL_CODEX_BASE_URL"] = f"{self.url}/v1"
        return env


class ProxiedRunner:
    def __init__(
        self,
        inner: Runner,
        proxy: CredentialProxy,
        endpoint: ProxyEndpoint,
        *,
        server_tools_groups: frozenset[str] = frozenset(),
    ) -> None:
        self.inner = inner
        self.proxy = proxy
        self.endpoint = endpoint
        self.server_tools_groups = server_tools_groups

    def engine_notes(self) -> list[str]:
        return engine_notes(self.inner)

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        env = {
            k: v
            for k, v in spec.env.items()
            if k not in MODEL_VARIABLES and k != SERVER_TOOLS_VARIABLE
        }
        if spec.agent == "command":
            bare = spec.model_copy(update={"env": env})
            async with contextlib.aclosing(_events(self.inner.run(bare))) as checks:
                async for event in checks:
                    yield event
            return
        grant = self.proxy.issue(
            spec.agent,
            f"{spec.group}/{spec.request.role}",
            tokens_left=spec.tokens_left,
            usd_left=spec.request.max_budget_usd,
            server_tools=spec.group in self.server_tools_groups,
        )
        env.update(self.endpoint.env(grant))
        if grant.server_tools:
            env[SERVER_TOOLS_VARIABLE] = "1"
        reported = Spent()
        try:
            events = self.inner.run(spec.model_copy(update={"env": env}))
            async with contextlib.aclosing(_until_refused(events, grant)) as merged:
                async for event in merged:
                    if event.kind == "usage":
                        continue  # the proxy's count replaces the runner's
                    if event.kind == "final":  # the model's answer, or the turn fails
                        event = checked_final(event, grant.answers.answer, grant.label)
                    # What the turn has spent so far goes ahead of each event: the engine
                    # knows it before the answer, and a turn cut short has it too.
                    usage = _usage(grant.spent.minus(reported))
                    if usage is not None:
                        reported = Spent(**vars(grant.spent))
                        yield usage
                    yield event
            usage = _usage(grant.spent.minus(reported))
            if usage is not None:
                yield usage
        finally:
            self.proxy.revoke(grant)


async def _events(events: AsyncIterator[RunEvent]) -> AsyncGenerator[RunEvent, None]:
    """The inner run's events, closed with the iteration (which stops the run)."""
    try:
        async for event in events:
            yield event
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


async def _until_refused(
    events: AsyncIterator[RunEvent], grant: Grant
) -> AsyncGenerator[RunEvent, None]:
    """The inner events, until the proxy refuses a request for the budget: then the inner run is
    closed (stopped) and an `error` event says why."""
    refused: asyncio.Task[Any] = asyncio.ensure_future(grant.refused.wait())
    pending: asyncio.Task[RunEvent] | None = None
    answered = False
    try:
        while True:
            pending = asyncio.ensure_future(anext(events))
            waiting: set[asyncio.Future[Any]] = {pending} if answered else {pending, refused}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await pending
                pending = None
                break
            try:
                event = pending.result()
            except StopAsyncIteration:
                pending = None
                return
            pending = None
            yield event
            # Once the turn has its answer, a refusal after it changes nothing.
            answered = answered or event.kind in ("final", "error")
        yield error(BUDGET, grant.refusal or "the task's budget is spent")
    finally:
        refused.cancel()
        if pending is not None and not pending.done():
            pending.cancel()
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


def _usage(spent: Spent) -> RunEvent | None:
    if spent.input_tokens <= 0 and spent.output_tokens <= 0 and spent.cost_usd <= 0:
        return None
    return RunEvent(
        kind="usage",
        input_tokens=spent.input_tokens,
        output_tokens=spent.output_tokens,
        cost_usd=spent.cost_usd,
    )
