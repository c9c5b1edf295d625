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
4. reads the body within the limits (container/proxy/limits.py: 413 past the size cap) and
   checks it against the API's allow-lists (container/proxy/policy.py: headers, query string,
   server tools; 400 when refused);
5. reserves what the request may cost from the turn's budget, waiting while the requests in
   flight may already spend it (grants.py), so parallel requests cannot overshoot it;
6. forwards it to the configured upstream only (the request's Host and any absolute URL are
   ignored), with the real key in place of the token, and streams the answer back chunk by
   chunk as it arrives (server-sent events are never buffered), reading the usage the API
   reports on the way (container/proxy/usage.py); when the answer ends, however it ends, the
   reservation is settled with that usage, or with an estimate of an answer cut short. The
   model's answer is read too (container/proxy/answers.py): the turn's final must be it
   (container/proxy/finals.py).

Revoking a grant also cuts the requests of that turn still in flight (and those waiting): a
turn that has ended talks to no model. A runner that hangs up cuts its request too (the
handler is cancelled, and the upstream connection closed). Since the proxy lives in the bot's
process, a bot that dies takes every turn's way to the model with it; limits.py keeps a runner
from taking the bot down (connections, idle connections, body sizes, requests in flight).
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
from container.proxy.grants import Grant, Grants, Spent
from container.proxy.limits import LINGER_S, BytePool, ConnectionGate, GatedServer, ProxyLimits
from container.proxy.policy import Checked, Refusal, check
from container.proxy.prices import PRICES, Price, cost_usd
from container.proxy.usage import ANTHROPIC, OPENAI, Exchange, UsageMeter
from runners.protocol import ModelAgent

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 900.0  # a model may think for minutes before its first byte
CONNECT_TIMEOUT_S = 30.0
RELAY_BYTES = 256 * 1024  # the most one relay step reads (and writes) of an answer


@dataclass(frozen=True)
class Route:
    agent: ModelAgent  # whose token may use it
    billed: bool  # answers cost tokens (count_tokens and the model list do not)


ROUTES: Mapping[tuple[str, str], Route] = {
    ("POST", "/v1/messages"): Route("claude", True),
    ("POST", "/v1/messages/count_tokens"): Route("claude", False),
    ("POST", "/v1/responses"): Route("codex", True),
    ("GET", "/v1/models"): Route("codex", False),
}
API_OF: Mapping[ModelAgent, str] = {"claude": ANTHROPIC, "codex": OPENAI}
# The paths whose answers are the model's words (recorded per grant: container/proxy/answers.py).
ANSWER_PATHS = frozenset({"/v1/messages", "/v1/responses"})

# Not copied from the upstream's answer: hop-by-hop headers, and the length and encoding of a
# body that aiohttp has already decompressed and that is re-sent in chunks. (What is copied
# from the runner's request is policy.py's allow-list.)
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
        limits: ProxyLimits | None = None,
    ) -> None:
        self.upstreams = dict(upstreams)
        self.prices = prices
        self.limits = limits or ProxyLimits()
        self.grants = Grants(self.limits.max_in_flight_per_run)
        self.gate = ConnectionGate(self.limits)
        self.bodies = BytePool(self.limits.max_buffered_bytes)
        self.forwarded = 0  # requests sent upstream, for tests and the log
        self.body_bytes_read = 0  # of all request bodies, for tests
        self._upstream_slots: asyncio.Semaphore | None = None
        self._inflight: dict[str, set[asyncio.Task[Any]]] = {}
        self._runner: web.ServerRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.tcp_url: str | None = None
        self.socket_path: Path | None = None

    # ------------------------------------------------------------------ lifecycle

    async def _ensure_runner(self) -> web.ServerRunner:
        if self._runner is None:
            server = GatedServer(
                self._handle,
                self.gate,
                handler_cancellation=True,  # a runner that hangs up cuts its request
                keepalive_timeout=self.limits.idle_timeout_s,
                lingering_time=LINGER_S,
                access_log=None,
            )
            self._runner = web.ServerRunner(server, handle_signals=False)
            await self._runner.setup()
            self._upstream_slots = asyncio.Semaphore(self.limits.max_in_flight)
            timeout = aiohttp.ClientTimeout(
                total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=READ_TIMEOUT_S
            )
            self._session = aiohttp.ClientSession(
                timeout=timeout,
                connector=aiohttp.TCPConnector(limit=self.limits.max_in_flight),
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
        server_tools: bool = False,
    ) -> Grant:
        return self.grants.issue(
            agent, label, tokens_left=tokens_left, usd_left=usd_left, server_tools=server_tools
        )

    def revoke(self, grant: Grant) -> None:
        """The token stops working now, and the turn's requests still in flight are cut."""
        self.grants.revoke(grant)
        for task in self._inflight.pop(grant.token, set()):
            task.cancel()

    # ------------------------------------------------------------------ requests

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        route = ROUTES.get((request.method, request.path))
        if route is None:
            api = OPENAI if request.path.startswith("/v1/responses") else ANTHROPIC
            return api_error(api, 404, "not_found_error", "not a model API path")
        api = API_OF[route.agent]
        grant = self.grants.find(_token(request, api))
        upstream = self.upstreams.get(route.agent)
        if grant is None or grant.agent != route.agent:
            return api_error(api, 401, "authentication_error", "invalid run token")
        if upstream is None:  # a live token: what is missing is the bot's credential
            what = f"Tribunal proxy: the bot has no model credential for {route.agent}"
            return api_error(api, 401, "authentication_error", what)
        reason = grant.over_budget()
        if reason is not None:
            return self._refuse_budget(api, grant, reason)
        declared = request.content_length
        if declared is not None and declared > self.limits.max_body_bytes:
            return self._too_large(api)  # before a byte of it is read
        task = asyncio.current_task()
        assert task is not None
        inflight = self._inflight.setdefault(grant.token, set())
        inflight.add(task)
        try:
            async with grant.slots:  # the turn's requests handled at once
                size = declared if declared is not None else self.limits.max_body_bytes
                async with self.bodies.hold(size):
                    return await self._admitted(request, grant, upstream, api, route)
        finally:
            inflight.discard(task)

    def _refuse_budget(self, api: str, grant: Grant, reason: str) -> web.Response:
        log.info("proxy: refused a request of %s: %s", grant.label, reason)
        grant.refuse(reason)
        return api_error(api, 400, "budget_exceeded", f"Tribunal: {reason}")

    def _too_large(self, api: str) -> web.Response:
        cap = self.limits.max_body_bytes
        response = api_error(
            api, 413, "request_too_large", f"Tribunal proxy: request body over {cap:,} bytes"
        )
        response.force_close()
        return response

    async def _read_body(self, request: web.BaseRequest) -> bytes | None:
        """The body, or None when it passes the size cap (reading stops there)."""
        chunks: list[bytes] = []
        size = 0
        async with asyncio.timeout(self.limits.body_timeout_s):
            while chunk := await request.content.readany():
                size += len(chunk)
                self.body_bytes_read += len(chunk)
                if size > self.limits.max_body_bytes:
                    return None
                chunks.append(chunk)
        return b"".join(chunks)

    async def _admitted(
        self, request: web.BaseRequest, grant: Grant, upstream: Upstream, api: str, route: Route
    ) -> web.StreamResponse:
        try:
            body = await self._read_body(request)
        except TimeoutError:
            return api_error(api, 408, "request_timeout", "Tribunal proxy: body too slow")
        if body is None:
            return self._too_large(api)
        try:
            checked = check(
                api, request.headers.items(), request.query, body, server_tools=grant.server_tools
            )
        except Refusal as refusal:
            log.warning("proxy: refused a request of %s: %s", grant.label, refusal.message)
            return api_error(api, refusal.status, refusal.kind, refusal.message)
        exchange = Exchange(api, checked.model, self.limits.input_estimate(len(body)))
        want = self._reservation(checked, exchange) if route.billed else Spent()
        reason = await grant.reserve(want)
        if reason is not None:
            return self._refuse_budget(api, grant, reason)
        try:
            assert self._upstream_slots is not None
            async with self._upstream_slots:  # requests forwarded at once, all turns
                return await self._forward(request, grant, upstream, checked, body, exchange)
        finally:
            grant.settle(want, exchange.charge(self.prices) if route.billed else exchange.read())

    def _reservation(self, checked: Checked, exchange: Exchange) -> Spent:
        output = checked.max_output or self.limits.default_output_reserve
        cost = cost_usd(
            checked.model,
            input_tokens=exchange.input_estimate,
            output_tokens=output,
            table=self.prices,
        )
        return Spent(exchange.input_estimate, output, cost)

    async def _forward(
        self,
        request: web.BaseRequest,
        grant: Grant,
        upstream: Upstream,
        checked: Checked,
        body: bytes,
        exchange: Exchange,
    ) -> web.StreamResponse:
        assert self._session is not None
        api = exchange.api
        headers = dict(checked.headers)
        headers["accept-encoding"] = "identity"
        if not upstream.key:
            pass  # a model server that takes no key
        elif api == ANTHROPIC:
            headers["x-api-key"] = upstream.key
        else:
            headers["authorization"] = f"Bearer {upstream.key}"
        url = upstream.url_for(api, request.path, checked.query)
        grant.requests += 1
        self.forwarded += 1
        exchange.sent = True
        tap: AnswerTap | None = grant.answers.ask() if request.path in ANSWER_PATHS else None
        try:
            async with self._session.request(
                request.method, url, data=body or None, headers=headers, allow_redirects=False
            ) as answer:
                streamed = answer.content_type == "text/event-stream"
                # The model is read from the answer too (it names it).
                meter = UsageMeter(api, streamed=streamed, model=checked.model, prices=self.prices)
                exchange.meter, exchange.status = meter, answer.status
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
                # One read takes everything that has arrived, up to RELAY_BYTES, joined once
                # (the client parser buffers an SSE stream as one piece per HTTP chunk, i.e. per
                # event): fewer, larger writes under load, and nothing is ever waited for, so
                # every event leaves as soon as it came. The same bytes object is then given to
                # the meter, the tap and the runner's connection: no copy of ours.
                while chunk := await content.read(RELAY_BYTES):
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
            if exchange.meter is not None:  # the answer had begun: nothing more can be said
                raise
            exchange.unreachable = True
            log.warning("proxy: %s upstream %s failed: %s", api, upstream.base_url, exc)
            return api_error(api, 502, "api_error", f"Tribunal proxy: upstream unreachable: {exc}")


def _token(request: web.BaseRequest, api: str) -> str | None:
    if api == ANTHROPIC and request.headers.get("x-api-key"):
        return request.headers["x-api-key"]
    auth = request.headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None
