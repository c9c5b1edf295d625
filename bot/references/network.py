"""The base URL check again at connect time, for every connection a reference's SDK client opens
(redirects included: both SDKs follow them). DESIGN §5.

`check_base_url` judges a URL's host when the settings load, but a name is not an address: what
`innocent.example` resolves to is decided by whoever runs its DNS, at each lookup, and can change
between a check and a connect (rebinding). So the references' HTTP clients get a network backend
(`CheckedNetwork`, an httpcore `AsyncNetworkBackend`) that resolves the host itself, refuses the
connection when the name or any address it resolves to is not public (`urls.private_host`, the
one classification), and then connects to those checked addresses, never resolving again. TLS
still verifies the certificate for the host *name*: httpcore passes the URL's host as the server
name to `start_tls` on the stream returned here, whatever address that stream reached.

A group with `allow_private_urls = true` gets the SDKs' own clients instead (no check, proxies
from the environment honoured). A checked client ignores the proxy variables: a proxy would
resolve the name itself, past the check.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Literal

import anthropic
import anyio
import httpcore2
import httpx2
import openai

from bot.references.urls import private_host

# A host name → the addresses to connect to, in the order to try them (the system resolver's
# order, which already prefers what this host can reach). Injectable: tests have no DNS.
Resolver = Callable[[str], Awaitable[Sequence[str]]]

# The SDKs' own pool limits (their DefaultAsyncHttpxClient applies them only to a transport
# it builds itself).
_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
_KEEPALIVE = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]  # long calls through NATs, as theirs


async def system_resolve(host: str) -> list[str]:
    """The host's addresses from the system resolver (getaddrinfo, in a worker thread)."""
    infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class RefusedAddress(httpcore2.ConnectError):
    """A connection not made because its host is not public; the message says which address.
    A ConnectError, so the SDKs treat it as one (APIConnectionError, from which `refusal` reads
    it back)."""


class CheckedNetwork(httpcore2.AsyncNetworkBackend):
    """Resolve, refuse private addresses, connect to the checked ones. `resolve` defaults to
    `system_resolve`, looked up at each connection (a test of the whole bot replaces it: tests
    have no DNS); `connect` is the network underneath (httpcore's AnyIO backend; tests route it
    to loopback)."""

    def __init__(
        self,
        resolve: Resolver | None = None,
        connect: httpcore2.AsyncNetworkBackend | None = None,
    ) -> None:
        self._resolve = resolve
        self._connect = connect if connect is not None else httpcore2.AnyIOBackend()

    async def addresses(self, host: str, timeout: float | None = None) -> list[str]:
        """The addresses a connection to `host` may use; RefusedAddress when the name or any of
        them is not public (one bad answer in a round-robin is enough: the next lookup may pick
        it), ConnectError when there is none, ConnectTimeout when the lookup outlasts `timeout`."""
        why = private_host(host)
        if why is not None:
            raise RefusedAddress(f"{host} is {why}")
        if _is_literal(host):
            return [host.strip("[]")]  # a public address (judged above): nothing to resolve
        try:
            with anyio.fail_after(timeout):
                found = list(await (self._resolve or system_resolve)(host))
        except TimeoutError:
            raise httpcore2.ConnectTimeout(f"resolving {host} timed out") from None
        except OSError as exc:
            raise httpcore2.ConnectError(f"cannot resolve {host}: {exc}") from None
        if not found:
            raise httpcore2.ConnectError(f"{host} has no address")
        for address in found:
            why = private_host(address)
            if why is not None:
                raise RefusedAddress(f"{host} resolves to {why} ({address})")
            if not _is_literal(address):  # a name would be looked up again when connecting
                raise httpcore2.ConnectError(f"{host}: the resolver answered {address!r}")
        return found

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        started = time.monotonic()
        addresses = await self.addresses(host, timeout)
        failure: httpcore2.ConnectError | None = None
        for address in addresses:
            left = None if timeout is None else max(0.0, timeout - (time.monotonic() - started))
            try:
                return await self._connect.connect_tcp(
                    address,
                    port,
                    timeout=left,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except httpcore2.ConnectError as exc:  # that address is down: the next one
                failure = exc
        assert failure is not None  # `addresses` is never empty
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        # A socket file is this machine: never for a checked client (none is configured).
        raise RefusedAddress(f"the unix socket {path} is on this machine")

    async def sleep(self, seconds: float) -> None:
        await self._connect.sleep(seconds)


def _is_literal(host: str) -> bool:
    bare = host.strip("[]").split("%")[0]
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in bare else socket.AF_INET, bare)
    except OSError:
        return False
    return True


class _CheckedTransport(httpx2.AsyncHTTPTransport):
    """httpx's transport on a pool that connects through `network`. The transport takes no
    network backend, so its pool is replaced (the same settings, plus the backend)."""

    def __init__(self, network: httpcore2.AsyncNetworkBackend) -> None:
        super().__init__(limits=_LIMITS, socket_options=_KEEPALIVE)
        self._pool = httpcore2.AsyncConnectionPool(
            # trust_env here only means SSL_CERT_FILE / SSL_CERT_DIR, as the SDKs read them.
            ssl_context=httpx2.create_ssl_context(trust_env=True),
            max_connections=_LIMITS.max_connections,
            max_keepalive_connections=_LIMITS.max_keepalive_connections,
            keepalive_expiry=_LIMITS.keepalive_expiry,
            socket_options=_KEEPALIVE,
            network_backend=network,
        )


def checked_http_client(
    sdk: Literal["anthropic", "openai"], network: CheckedNetwork
) -> httpx2.AsyncClient:
    """The SDK's default client (its timeouts, redirects followed, its limits) on a transport
    whose every connection goes through `network`. No proxies from the environment (trust_env
    off): a proxy would resolve the name itself."""
    default = (
        anthropic.DefaultAsyncHttpxClient if sdk == "anthropic" else openai.DefaultAsyncHttpxClient
    )
    client: httpx2.AsyncClient = default(transport=_CheckedTransport(network), trust_env=False)
    return client


def refusal(exc: BaseException) -> str | None:
    """The RefusedAddress message behind an SDK's connection error, if that is what it was."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, RefusedAddress):
            return str(current)
        current = current.__cause__ or current.__context__
    return None
