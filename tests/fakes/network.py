"""The edge under bot/references/network.py, for tests without DNS or a network: a scripted
resolver (names → addresses, answers that can change between lookups, as a rebinding DNS
server's do) and a network backend that records the address each connection was asked for and
reaches the loopback fake on the same port instead (the only place a test may connect to).

    dns = FakeDNS({"api.reference.test": ["93.184.215.14"]})
    wire = LoopbackWire()
    network = CheckedNetwork(dns.resolve, wire)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import httpcore2

PUBLIC = "93.184.215.14"  # a global address: never connected to, the wire goes to loopback


@dataclass
class FakeDNS:
    """Each name's answers, one list per lookup (the last one repeats); `lookups` in order."""

    answers: Mapping[str, Sequence[str] | Sequence[Sequence[str]]]
    lookups: list[str] = field(default_factory=list)

    async def resolve(self, host: str) -> list[str]:
        nth = self.lookups.count(host)
        self.lookups.append(host)
        if host not in self.answers:
            raise OSError(f"[Errno -2] Name or service not known: {host}")
        answer = self.answers[host]
        if answer and not isinstance(answer[0], str):  # one answer per lookup
            rounds = list(answer)
            return list(rounds[min(nth, len(rounds) - 1)])
        return [str(a) for a in answer]


@dataclass
class LoopbackWire(httpcore2.AsyncNetworkBackend):
    """Connects every (address, port) asked for to 127.0.0.1 on that port; `asked` records them."""

    asked: list[tuple[str, int]] = field(default_factory=list)
    wire: httpcore2.AsyncNetworkBackend = field(default_factory=httpcore2.AnyIOBackend)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        self.asked.append((host, port))
        return await self.wire.connect_tcp("127.0.0.1", port, timeout=timeout)

    async def sleep(self, seconds: float) -> None:
        await self.wire.sleep(seconds)
