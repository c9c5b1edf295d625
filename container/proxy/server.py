"""The credential proxy: model keys stay on the host; a turn holds only a run token.

An aiohttp server (one per bot process) in front of the model APIs. A runner's model client is
pointed at it (ANTHROPIC_BASE_URL / the Codex provider's base_url) with a run token in place of
the key (container/proxy/grants.py). For each request the proxy:

1. accepts only the model API's own paths: `POST /v1/messages` and `/v1/messages/count_tokens`
   for Claude, `POST /v1/responses` and `GET /v1/models` for Codex; any other method or path
   gets 404, and nothing is forwarded;
2. looks up the token (Anthropic clients send it as `x-api-key` or `Authorization: Bearer`,
   OpenAI clients as `Authorization: Bearer`); a missing, unknown, revoked token, or one of the
   other agent type, gets 401 and nothing is forwarded;
3. refuses the request with 400 when the turn's budget is spent (a clear error in the API's
   own error format, `x-should-retry: false`), and tells the grant, so the turn ends at once
   (container/proxy/runner.py);
4. forwards it to the configured upstream only (the request's Host and any absolute URL are
   ignored), with the real key in place of the token, and streams the answer back chunk by
   chunk as it arrives (server-sent events are never buffered), reading the usage the API
   reports on the way (container/proxy/usage.py) into the grant, and the model's answer
   (container/proxy/answers.py), which the turn's final must be (container/proxy/finals.py).

Revoking a grant also cuts the requests of that turn still in flight: a turn that has ended
talks to no model. Since the proxy lives in the bot's process, a bot that dies takes every
turn's way to the model with it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from container.proxy.answers import AnswerTap
from container.proxy.grants import Grant, Grants
from container.proxy.prices import PRICES, Price
from container.proxy.usage import ANTHROPIC, OPENAI, UsageMeter
from runners.protocol import ModelAgent

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 64 * 1024 * 1024  # a long conversation with tool results is large
READ_TIMEOUT_S = 900.0  # a model may think for minutes before its first byte
CONNECT_TIMEOUT_S = 30.0

# (method, path) → the agent type whose token may use it.
ROUTES: Mapping[tuple[str, str], ModelAgent] = {
    ("POST", "/v1/messages"): "claude",
    ("POST", "/v1/messages/count_tokens"): "claude",
    ("POST", "/v1/responses"): "codex",
    ("GET", "/v1/models"): "codex",
}
API_OF: Mapping[ModelAgent, str] = {"claude": ANTHROPIC, "codex": OPENAI}
# The paths whose answers are the model's words (recorded per grant: container/proxy/answers.py).
ANSWER_PATHS = frozenset({"/v1/messages", "/v1/responses"})

# Never copied from the runner's request: hop-by-hop headers, the address, the credentials
# (the token is replaced by the key), cookies, and compression (the proxy reads the usage).
_REQUEST_DROP = frozenset(
    {
        "host", "content-length", "transfer-encoding", "connection", "keep-alive", "te",
        "trailer", "upgrade", "proxy-authorization", "proxy-connection", "authorization",
        "x-api-key", "accept-encoding", "cookie",
    }
)  # fmt: skip
# Not copied from the upstream's answer: hop-by-hop headers, and the length and encoding of a
# body that aiohttp has already decompressed and that is re-sent in chunks.
_RESPONSE_DROP = frozenset(
    {
        "content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive",
        "set-cookie",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Upstream:
    """A model API the proxy forwards to. `base_url` as that API's SDK takes it: Anthropic's
    without `/v1` (https://api.anthropic.com), OpenAI's with it (https://api.openai.com/v1).
    An empty `key`: the upstream is sent no credentials."""

    base_url: str
    key: str

    def url_for(self, api: str, path: str, query: str) -> str:
        base = self.base_url.rstrip("/")
        if api == OPENAI and base.endswith("/v1"):
            path = path.removeprefix("/v1")
        return f"{base}{path}" + (f"?{query}" if query else "")


def api_error(api: str, status: int, kind: str, message: str) -> web.Response:
    """An error in the model API's own format, so the runner's client reports it as such."""
    if api == ANTHROPIC:
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "code": kind}}
    return web.json_response(body, status=status, headers={"x-should-retry": "false"})


class CredentialProxy:
    """`upstreams` per agent type; an agent type without one is refused (401)."""

    def __init__(
        self,
        upstreams: Mapping[ModelAgent, Upstream],
        *,
        prices: Mapping[str, Price] = PRICES,
    ) -> None:
        self.upstreams = dict(upstreams)
        self.prices = prices
        self.grants = Grants()
        self.forwarded = 0  # requests sent upstream, for tests and the log
        self._inflight: dict[str, set[asyncio.Task[Any]]] = {}
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.tcp_url: str | None = None
        self.socket_path: Path | None = None

    # ------------------------------------------------------------------ lifecycle

    async def _ensure_runner(self) -> web.AppRunner:
        if self._runner is None:
            app = web.Application(client_max_size=MAX_REQUEST_BYTES)
            app.router.add_route("*", "/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
            await self._runner.setup()
            timeout = aiohttp.ClientTimeout(
                total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=READ_TIMEOUT_S
            )
            self._session = aiohttp.ClientSession(
                timeout=timeout,
                connector=aiohttp.TCPConnector(limit=100),
                trust_env=False,
                auto_decompress=True,
            )
        return self._runner

    async def listen_tcp(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on a TCP address (the local backend's runners); returns the base URL."""
        runner = await self._ensure_runner()
        sock = socket.create_server((host, port))
        site = web.SockSite(runner, sock)
        await site.start()
        bound_host, bound_port = sock.getsockname()[:2]
        self.tcp_url = f"http://{bound_host}:{bound_port}"
        return self.tcp_url

    async def listen_unix(self, path: Path) -> Path:
        """Listen on a unix socket (bind-mounted into the runner containers), mode 0666 so the
        containers' uid can connect; the folder it is in decides who can reach it."""
        runner = await self._ensure_runner()
        path.unlink(missing_ok=True)
        site = web.UnixSite(runner, str(path))
        await site.start()
        os.chmod(path, 0o666)
        self.socket_path = path
        return path

    async def close(self) -> None:
        for tasks in list(self._inflight.values()):
            for task in tasks:
                task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ grants

    def issue(
        self,
        agent: ModelAgent,
        label: str = "",
        *,
        tokens_left: int | None = None,
        usd_left: float | None = None,
    ) -> Grant:
        return self.grants.issue(agent, label, tokens_left=tokens_left, usd_left=usd_left)

    def revoke(self, grant: Grant) -> None:
        """The token stops working now, and the turn's requests still in flight are cut."""
        self.grants.revoke(grant)
        for task in self._inflight.pop(grant.token, set()):
            task.cancel()

    # ------------------------------------------------------------------ requests

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        agent = ROUTES.get((request.method, request.path))
        if agent is None:
            api = OPENAI if request.path.startswith("/v1/responses") else ANTHROPIC
            return api_error(api, 404, "not_found_error", "not a model API path")
        api = API_OF[agent]
        grant = self.grants.find(_token(request, api))
        upstream = self.upstreams.get(agent)
        if grant is None or grant.agent != agent or upstream is None:
            return api_error(api, 401, "authentication_error", "invalid run token")
        reason = grant.over_budget()
        if reason is not None:
            log.info("proxy: refused a request of %s: %s", grant.label, reason)
            grant.refuse(reason)
            return api_error(api, 400, "budget_exceeded", f"Tribunal: {reason}")
        task = asyncio.current_task()
        assert task is not None
        inflight = self._inflight.setdefault(grant.token, set())
        inflight.add(task)
        try:
            return await self._forward(request, grant, upstream, api)
        finally:
            inflight.discard(task)

    async def _forward(
        self, request: web.Request, grant: Grant, upstream: Upstream, api: str
    ) -> web.StreamResponse:
        assert self._session is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _REQUEST_DROP}
        headers["accept-encoding"] = "identity"
        if not upstream.key:
            pass  # a model server that takes no key
        elif api == ANTHROPIC:
            headers["x-api-key"] = upstream.key
        else:
            headers["authorization"] = f"Bearer {upstream.key}"
        url = upstream.url_for(api, request.path, request.query_string)
        grant.requests += 1
        self.forwarded += 1
        meter: UsageMeter | None = None
        tap: AnswerTap | None = grant.answers.ask() if request.path in ANSWER_PATHS else None
        try:
            async with self._session.request(
                request.method, url, data=body or None, headers=headers, allow_redirects=False
            ) as answer:
                streamed = answer.content_type == "text/event-stream"
                # The model is read from the answer (it names it): parsing a request body of
                # megabytes would delay every first token.
                meter = UsageMeter(api, streamed=streamed, prices=self.prices)
                if tap is not None and answer.status == 200:
                    tap.open(api, streamed=streamed)
                response = web.StreamResponse(
                    status=answer.status,
                    headers={
                        k: v for k, v in answer.headers.items() if k.lower() not in _RESPONSE_DROP
                    },
                )
                await response.prepare(request)
                content = answer.content
                while chunk := await content.readany():
                    # Whatever else has arrived goes in the same write (fewer, larger writes
                    # under load); nothing is ever waited for, so every event leaves as soon as
                    # it came.
                    more = content.read_nowait()
                    if more:
                        chunk += more
                    meter.feed(chunk)
                    if tap is not None:  # before the runner has the bytes
                        tap.feed(chunk)
                    await response.write(chunk)
                meter.finish()
                if tap is not None:
                    tap.finish()
                await response.write_eof()
                return response
        except (aiohttp.ClientConnectionError, TimeoutError) as exc:
            if meter is not None:  # the answer had begun: nothing more can be said
                raise
            log.warning("proxy: %s upstream %s failed: %s", api, upstream.base_url, exc)
            return api_error(api, 502, "api_error", f"Tribunal proxy: upstream unreachable: {exc}")
        finally:
            if meter is not None:
                grant.spent.add(meter.spent())


def _token(request: web.Request, api: str) -> str | None:
    if api == ANTHROPIC and request.headers.get("x-api-key"):
        return request.headers["x-api-key"]
    auth = request.headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None
