"""The connect-time address check (bot/references/network.py) on its own: which answers of a
resolver are refused, that nothing is resolved twice, and what a connection is made to."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import httpcore2
import pytest

from bot.references.network import CheckedNetwork, RefusedAddress, refusal
from tests.fakes.network import PUBLIC, FakeDNS, LoopbackWire

PRIVATE = [
    ("127.0.0.1", "loopback"),
    ("127.8.9.10", "loopback"),
    ("169.254.169.254", "link-local"),
    ("::1", "loopback"),
    ("10.0.0.7", "private"),
    ("192.168.1.2", "private"),
    ("100.64.0.9", "reserved or shared"),
    ("0.0.0.0", "unspecified"),
    ("::ffff:10.0.0.7", "private"),  # IPv4-mapped
    ("::ffff:169.254.169.254", "link-local"),
    ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
    ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
    ("::7f00:1", "loopback"),  # IPv4-compatible 127.0.0.1
    ("64:ff9b:1::5", "private"),  # a local NAT64 prefix
    ("fd00:ec2::254", "private"),  # the AWS metadata service over IPv6
    ("fe80::1%eth0", "link-local"),
]


@pytest.mark.parametrize(("address", "why"), PRIVATE)
async def test_a_name_resolving_to_a_private_address_is_refused_before_any_connection(
    address: str, why: str
) -> None:
    dns, wire = FakeDNS({"innocent.example": [address]}), LoopbackWire()
    with pytest.raises(RefusedAddress, match=why) as caught:
        await CheckedNetwork(dns.resolve, wire).connect_tcp("innocent.example", 443, timeout=5)
    assert str(caught.value).startswith("innocent.example resolves to ")
    assert str(caught.value).endswith(f"({address})")
    assert wire.asked == []


async def test_one_private_address_among_public_ones_refuses_the_name() -> None:
    # A round-robin answer with one bad address: the next connection could pick it.
    dns, wire = (
        FakeDNS({"innocent.example": [PUBLIC, "2606:4700::1111", "127.0.0.1"]}),
        LoopbackWire(),
    )
    with pytest.raises(RefusedAddress, match=r"loopback address \(127\.0\.0\.1\)"):
        await CheckedNetwork(dns.resolve, wire).connect_tcp("innocent.example", 443)
    assert wire.asked == []


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("localhost", "local or metadata host name"),
        ("metadata.google.internal", "local or metadata host name"),
        ("intranet", "single-label"),
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "link-local"),
    ],
)
async def test_local_names_and_private_literals_are_refused_without_a_lookup(
    host: str, why: str
) -> None:
    dns, wire = FakeDNS({host: [PUBLIC]}), LoopbackWire()  # even if DNS said otherwise
    with pytest.raises(RefusedAddress, match=f"^{host} is .*{why}"):
        await CheckedNetwork(dns.resolve, wire).connect_tcp(host, 80)
    assert dns.lookups == [] and wire.asked == []


async def test_the_connection_goes_to_the_checked_address_resolved_once() -> None:
    # A rebinding DNS server: public for the first lookup, loopback for any later one. The
    # check and the connection share one lookup, so the second answer is never used.
    dns = FakeDNS({"innocent.example": [[PUBLIC], ["127.0.0.1"]]})
    wire = LoopbackWire()
    with _listening() as port:
        stream = await CheckedNetwork(dns.resolve, wire).connect_tcp("innocent.example", port)
        await stream.aclose()
        assert wire.asked == [(PUBLIC, port)] and dns.lookups == ["innocent.example"]
        # The next connection looks up again, and is refused.
        with pytest.raises(RefusedAddress, match=r"\(127\.0\.0\.1\)"):
            await CheckedNetwork(dns.resolve, wire).connect_tcp("innocent.example", port)
    assert wire.asked == [(PUBLIC, port)]


async def test_addresses_are_tried_in_order_and_a_public_literal_is_not_looked_up() -> None:
    dns = FakeDNS({"api.reference.test": ["2606:4700::1111", PUBLIC]})
    wire = _FailingFirst()
    with _listening() as port:
        stream = await CheckedNetwork(dns.resolve, wire).connect_tcp("api.reference.test", port)
        await stream.aclose()
        stream = await CheckedNetwork(dns.resolve, wire).connect_tcp(PUBLIC, port)
        await stream.aclose()
    assert wire.asked == [("2606:4700::1111", port), (PUBLIC, port), (PUBLIC, port)]
    assert dns.lookups == ["api.reference.test"]


async def test_a_failed_empty_odd_or_slow_lookup_is_a_connect_error_not_a_refusal() -> None:
    never = asyncio.Event()

    async def hangs(host: str) -> list[str]:
        await never.wait()
        return [PUBLIC]

    dns = FakeDNS({"empty.example": [], "odd.example": ["api.reference.test"]})
    wire = LoopbackWire()
    network = CheckedNetwork(dns.resolve, wire)
    with pytest.raises(httpcore2.ConnectError, match="cannot resolve nowhere.example") as failed:
        await network.connect_tcp("nowhere.example", 443)
    assert refusal(failed.value) is None
    with pytest.raises(httpcore2.ConnectError, match="empty.example has no address"):
        await network.connect_tcp("empty.example", 443)
    # Only addresses are connected to: a name would be looked up again by the connection.
    with pytest.raises(httpcore2.ConnectError, match="resolver answered 'api.reference.test'"):
        await network.connect_tcp("odd.example", 443)
    with pytest.raises(httpcore2.ConnectTimeout, match="resolving slow.example timed out"):
        await CheckedNetwork(hangs, wire).connect_tcp("slow.example", 443, timeout=0.01)
    assert wire.asked == []


async def test_a_unix_socket_is_refused() -> None:
    with pytest.raises(RefusedAddress, match="on this machine"):
        await CheckedNetwork(FakeDNS({}).resolve).connect_unix_socket("/run/docker.sock")


class _FailingFirst(LoopbackWire):
    """The first address asked for is down, as one over an unreachable IPv6 route is."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        if not self.asked:
            self.asked.append((host, port))
            raise httpcore2.ConnectError("[Errno 101] Network is unreachable")
        return await super().connect_tcp(host, port, timeout=timeout)


@contextmanager
def _listening() -> Iterator[int]:
    """A loopback port that accepts connections (and does nothing with them)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield int(server.getsockname()[1])
