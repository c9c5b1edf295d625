"""What the credential proxy lets in, and how much of it at once: it lives in the bot's process,
so a runner (or whatever else reaches its socket) must not be able to take the bot down by
holding connections open, sending huge bodies, or sending many requests at once.

- Connections: at most `max_connections` open at once, and `max_connections_per_peer` from one
  peer; one past either is closed as soon as it is accepted. A peer is a container where that
  can be told: on the unix socket, the pid namespace of the connecting process (SO_PEERCRED; each
  runner container has its own), else its uid; on TCP, its address.
- Idle connections: one that has sent no complete request for `idle_timeout_s` (a client that
  connects and says nothing, or sends its headers a byte at a time, or an idle keep-alive) is
  closed (aiohttp's `keepalive_timeout`, which also runs from the moment of the connect). A
  request refused before its body was read (401, 413…) is drained for at most `LINGER_S`.
- Bodies: a request whose Content-Length passes `max_body_bytes` gets 413 before a byte of it
  is read; a body without a length is read up to that cap and then refused (413) the same way.
  Every body is counted against `max_buffered_bytes` (all bodies held at once, while they are
  read and forwarded): a request waits for room before its body is read, so the bodies in the
  bot's memory never pass that sum. A body must arrive within `body_timeout_s`.
- Requests in flight: at most `max_in_flight` forwarded upstream at once, and
  `max_in_flight_per_run` per run token (container/proxy/grants.py); a request past either waits
  its turn (without its body read, for the latter).
- Budget reservations (grants.py): what a request may cost is reserved before it is forwarded:
  its output limit (`max_tokens` / `max_output_tokens`, else `default_output_reserve`) plus its
  input, estimated at one token per `BYTES_PER_INPUT_TOKEN` bytes of body, at most
  `max_input_estimate`.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

MIB = 1024 * 1024
LINGER_S = 1.0
BYTES_PER_INPUT_TOKEN = 4  # English text and code run at 3–4 bytes a token


@dataclass(frozen=True)
class ProxyLimits:
    """The proxy's limits (see the module docstring); the defaults are what the bot uses."""

    # The Messages API's own request limit is 32 MB: no real request of a runner is larger.
    max_body_bytes: int = 32 * MIB
    max_buffered_bytes: int = 64 * MIB  # two largest bodies; ~3x that in memory at peak
    body_timeout_s: float = 120.0
    max_connections: int = 256
    max_connections_per_peer: int = 64
    idle_timeout_s: float = 5.0
    max_in_flight: int = 64
    max_in_flight_per_run: int = 8
    default_output_reserve: int = 32_000
    max_input_estimate: int = 1_000_000

    def __post_init__(self) -> None:
        if self.max_buffered_bytes < self.max_body_bytes:
            raise ValueError("max_buffered_bytes must hold at least one largest body")

    def input_estimate(self, body_bytes: int) -> int:
        return min(body_bytes // BYTES_PER_INPUT_TOKEN + 1, self.max_input_estimate)


class BytePool:
    """Bytes of request bodies held at once, at most `capacity`: `hold(n)` waits for room."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.held = 0
        self.peak = 0  # the most ever held at once (tests and the log)
        self._freed = asyncio.Event()

    @asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        size = min(size, self.capacity)
        while self.held + size > self.capacity:
            freed = self._freed
            await freed.wait()
        self.held += size
        self.peak = max(self.peak, self.held)
        try:
            yield
        finally:
            self.held -= size
            self._freed.set()
            self._freed = asyncio.Event()


def peer_of(transport: asyncio.BaseTransport) -> str:
    """Who is connecting, as precisely as the socket tells: a container on the unix socket (its
    pid namespace), else a uid, else a TCP address."""
    sock = transport.get_extra_info("socket")
    family = getattr(sock, "family", None)
    if family == socket.AF_UNIX and hasattr(socket, "SO_PEERCRED"):
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return "unix:?"
        pid, uid, _gid = struct.unpack("3i", raw)
        try:
            return f"pidns:{os.readlink(f'/proc/{pid}/ns/pid')}"
        except OSError:  # gone already, or not ours to look at
            return f"uid:{uid}"
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and peer:
        return f"ip:{peer[0]}"
    return "unknown"


class ConnectionGate:
    """Counts the open connections, in all and per peer; `admit` says whether one more may stay."""

    def __init__(self, limits: ProxyLimits) -> None:
        self.limits = limits
        self.per_peer: Counter[str] = Counter()
        self.refused = 0  # connections closed at once for a cap (tests and the log)

    @property
    def open(self) -> int:
        return sum(self.per_peer.values())

    def admit(self, peer: str) -> bool:
        if (
            self.open >= self.limits.max_connections
            or self.per_peer[peer] >= self.limits.max_connections_per_peer
        ):
            self.refused += 1
            return False
        self.per_peer[peer] += 1
        return True

    def release(self, peer: str) -> None:
        self.per_peer[peer] -= 1
        if self.per_peer[peer] <= 0:
            del self.per_peer[peer]


class GatedServer(web.Server):
    """aiohttp's low-level server, with the connection caps of a `ConnectionGate`: a connection
    past a cap is aborted as soon as it is made (before a byte of it is read)."""

    def __init__(self, handler: Any, gate: ConnectionGate, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self.gate = gate
        self._peers: dict[RequestHandler, str] = {}

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        super().connection_made(handler, transport)
        peer = peer_of(transport)
        if self.gate.admit(peer):
            self._peers[handler] = peer
        else:
            transport.abort()  # connection_lost follows, which ends the handler

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        peer = self._peers.pop(handler, None)
        if peer is not None:
            self.gate.release(peer)
        super().connection_lost(handler, exc)
