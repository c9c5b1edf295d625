"""The proxy runs in the bot's process: what a runner (or anything that reaches its socket) can
make it hold (container/proxy/limits.py). Before: idle connections without a token stayed open
(aiohttp's keep-alive of an hour), exhausting the bot's file descriptors; a 60 MiB body was
read whole, and 12 of them at once lifted the bot to 1.9 GiB."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import anthropic
import pytest

from container.proxy import CredentialProxy, Upstream
from container.proxy.limits import MIB, ProxyLimits
from tests.container.proxy.conftest import ANTHROPIC_KEY
from tests.fakes.messages_api import FakeMessagesAPI

pytestmark = pytest.mark.timeout(60)
USER = [{"role": "user", "content": "hi"}]
LIMITS = ProxyLimits(
    max_connections=16,
    max_connections_per_peer=8,
    idle_timeout_s=0.5,
    max_body_bytes=1 * MIB,
    max_buffered_bytes=2 * MIB,
)


@pytest.fixture
async def limited(messages_api: FakeMessagesAPI) -> AsyncIterator[CredentialProxy]:
    proxy = CredentialProxy({"claude": Upstream(messages_api.url, ANTHROPIC_KEY)}, limits=LIMITS)
    await proxy.listen_tcp()
    try:
        yield proxy
    finally:
        await proxy.close()


def address(proxy: CredentialProxy) -> tuple[str, int]:
    assert proxy.tcp_url is not None
    host, port = proxy.tcp_url.removeprefix("http://").split(":")
    return host, int(port)


async def closed_by_proxy(reader: asyncio.StreamReader) -> bool:
    """Whether the proxy closes the connection (bounded, so a proxy that never does fails)."""
    try:
        return await asyncio.wait_for(reader.read(), 10) == b""
    except (TimeoutError, ConnectionError):
        return False


async def test_idle_connections_are_refused_past_the_caps_and_closed_when_idle(
    limited: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    """40 connections that say nothing, and 5 that send half a request a byte at a time: those
    past the caps (8 from one address) are closed as soon as they are made, the others once
    idle; then a real request goes through."""
    host, port = address(limited)
    connections = [await asyncio.open_connection(host, port) for _ in range(40)]
    slow = []
    for _ in range(5):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n")
        slow.append((reader, writer))
    try:
        outcomes = await asyncio.gather(
            *(closed_by_proxy(reader) for reader, _ in connections + slow)
        )
        assert all(outcomes)
        assert limited.gate.refused >= 45 - LIMITS.max_connections_per_peer
        assert limited.gate.open == 0
    finally:
        for _, writer in connections + slow:
            writer.close()
    grant = limited.issue("claude")
    client = anthropic.AsyncAnthropic(api_key=grant.token, base_url=limited.tcp_url, max_retries=0)
    await client.messages.create(model="m", max_tokens=5, messages=USER)
    assert len(messages_api.calls) == 1


async def test_the_default_proxy_closes_idle_connections_within_seconds(
    proxy: CredentialProxy,
) -> None:
    """The bot's own settings (ProxyLimits' defaults): 20 connections without a request are
    all closed (the idle timeout is 5 s; the wait is bounded at 10 s)."""
    host, port = address(proxy)
    connections = [await asyncio.open_connection(host, port) for _ in range(20)]
    try:
        assert all(await asyncio.gather(*(closed_by_proxy(r) for r, _ in connections)))
    finally:
        for _, writer in connections:
            writer.close()


async def test_the_default_proxy_refuses_a_60_mib_body(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    """Before, 60 MiB passed the 64 MiB cap and was read whole (12 at once: 1.9 GiB)."""
    grant = proxy.issue("claude")
    body = b" " * (60 * MIB)
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{proxy.tcp_url}/v1/messages", data=body, headers={"x-api-key": grant.token}
            ) as answer,
        ):
            assert answer.status == 413
    except aiohttp.ClientError:
        pass  # the proxy answered and closed before the client had sent it all
    assert messages_api.requests == [] and proxy.forwarded == 0


async def test_a_unix_socket_peer_is_told_apart_by_its_process(
    messages_api: FakeMessagesAPI, tmp_path: Path
) -> None:
    """On the socket the containers mount, a peer is its pid namespace (a container), read
    from the connecting process."""
    proxy = CredentialProxy({"claude": Upstream(messages_api.url, ANTHROPIC_KEY)}, limits=LIMITS)
    path = await proxy.listen_unix(tmp_path / "proxy.sock")
    try:
        reader, writer = await asyncio.open_unix_connection(str(path))
        while not proxy.gate.open:
            await asyncio.sleep(0.01)
        (peer,) = proxy.gate.per_peer
        assert peer.startswith(("pidns:pid:[", "uid:"))
        writer.close()
    finally:
        await proxy.close()


async def test_a_body_over_the_cap_is_refused_unread(
    limited: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    """Content-Length over the cap: 413 before a byte of the body is read."""
    grant = limited.issue("claude")
    body = b"x" * (LIMITS.max_body_bytes + 1)
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{limited.tcp_url}/v1/messages", data=body, headers={"x-api-key": grant.token}
        ) as answer,
    ):
        assert answer.status == 413
        assert "request body over" in (await answer.json())["error"]["message"]
    assert limited.body_bytes_read == 0 and messages_api.requests == []


async def test_a_body_without_a_length_is_cut_at_the_cap(
    limited: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    """A chunked body of 4 MiB: read up to the cap (1 MiB), then refused."""
    grant = limited.issue("claude")

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(64):
            yield b"x" * (64 * 1024)

    async with aiohttp.ClientSession() as session:
        try:
            async with session.post(
                f"{limited.tcp_url}/v1/messages", data=chunks(), headers={"x-api-key": grant.token}
            ) as answer:
                assert answer.status == 413
        except aiohttp.ClientError:
            pass  # the proxy may close before the client has sent it all
    assert limited.body_bytes_read <= LIMITS.max_body_bytes + 256 * 1024
    assert messages_api.requests == []


async def test_bodies_held_at_once_stay_within_the_pool(messages_api: FakeMessagesAPI) -> None:
    """12 requests of ~0.9 MiB each at once (under the cap), from 2 turns: all answered, but
    never more than 2 MiB of bodies held (the others wait for room before theirs is read)."""
    limits = ProxyLimits(max_body_bytes=1 * MIB, max_buffered_bytes=2 * MIB)
    proxy = CredentialProxy({"claude": Upstream(messages_api.url, ANTHROPIC_KEY)}, limits=limits)
    await proxy.listen_tcp()
    big = [{"role": "user", "content": "x" * (900 * 1024)}]
    calls = []
    try:
        for _ in range(2):
            grant = proxy.issue("claude")
            client = anthropic.AsyncAnthropic(
                api_key=grant.token, base_url=proxy.tcp_url, max_retries=0
            )
            calls += [
                client.messages.create(model="m", max_tokens=5, messages=big) for _ in range(6)
            ]
        await asyncio.gather(*calls)
    finally:
        await proxy.close()
    assert len(messages_api.calls) == 12
    assert 0 < proxy.bodies.peak <= limits.max_buffered_bytes
