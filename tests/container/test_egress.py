"""Egress of the runner containers (network_mode "none", the default): from inside, the fake
API's own address, other services of this host (on loopback and on every address of the host,
bound to all interfaces), and a DNS lookup all fail; the credential proxy, reached through the
bind-mounted socket and the runner's loopback forwarder, answers (200 with the run token, 401
with another), and only it reaches the model API, with the real key the container never saw."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from container.docker_pool import PROXY_MOUNT
from container.proxy import CredentialProxy, Upstream
from container.proxy.runner import ProxiedRunner, ProxyEndpoint
from runners.protocol import UNVERIFIED
from tests.container.conftest import MakeBackend, collect, spec
from tests.fakes.messages_api import FakeMessagesAPI

pytestmark = [pytest.mark.engine, pytest.mark.timeout(180)]
KEY = "sk-ant-egress-REAL-key"
PROBE = ("python3", "/opt/test-runners/net_probe.py")


def host_addresses() -> list[str]:
    """This machine's own IPv4 addresses other than loopback (none of them leaves it)."""
    try:
        done = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True)
    except OSError:
        return []
    found = []
    for line in done.stdout.splitlines():
        address = line.split()[3].split("/")[0]
        if not address.startswith("127."):
            found.append(address)
    return found


@pytest.fixture
def other_service() -> Iterator[int]:
    """A TCP service of this host on every interface: what a container must still not reach."""
    server = socket.create_server(("0.0.0.0", 0))
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.fixture
async def socket_proxy(
    tmp_path: Path,
) -> AsyncIterator[tuple[CredentialProxy, Path, FakeMessagesAPI]]:
    folder = tmp_path / "proxy"
    folder.mkdir()
    os.chmod(folder, 0o711)
    with FakeMessagesAPI() as fake:
        proxy = CredentialProxy({"claude": Upstream(fake.url, KEY)})
        await proxy.listen_unix(folder / "proxy.sock")
        try:
            yield proxy, folder, fake
        finally:
            await proxy.close()


async def test_a_container_reaches_the_proxy_and_nothing_else(
    make_backend: MakeBackend,
    socket_proxy: tuple[CredentialProxy, Path, FakeMessagesAPI],
    other_service: int,
) -> None:
    proxy, folder, fake = socket_proxy
    fake_port = int(fake.url.rsplit(":", 1)[1])
    backend = make_backend(command=PROBE, network_mode="none", proxy_socket_dir=str(folder))
    runner = ProxiedRunner(backend, proxy, ProxyEndpoint(socket=f"{PROXY_MOUNT}/proxy.sock"))
    targets = [["127.0.0.1", fake_port], ["127.0.0.1", other_service]]
    targets += [
        [address, port] for address in host_addresses() for port in (fake_port, other_service)
    ]
    targets += [["10.88.0.1", other_service], ["172.17.0.1", other_service]]  # default bridges
    plan = {"tcp": targets, "dns": ["tribunal-egress-check.invalid", "localhost.invalid"]}
    events = await collect(runner, spec(json.dumps(plan)))  # type: ignore[arg-type]
    # The probe's final is not the model's answer: refused (container/proxy/finals.py); its
    # findings came as progress.
    (answer,) = [e for e in events if e.kind in ("final", "error")]
    assert answer.code == UNVERIFIED, events
    found: dict[str, Any] = json.loads([e for e in events if e.kind == "progress"][-1].text)
    assert found["routes"] == []  # no interface but loopback, so nothing can leave
    assert len(found["tcp"]) == len(targets)
    opened = [target for target, outcome in found["tcp"].items() if outcome == "open"]
    assert opened == [], found["tcp"]
    for name, outcome in found["dns"].items():
        assert outcome.startswith("gaierror"), (name, outcome)
    assert found["proxy"]["with_token"] == 200
    assert found["proxy"]["wrong_token"] == 401
    (call,) = fake.calls  # only the request with the run token got through, with the real key
    assert call.headers["x-api-key"] == KEY
    assert len(proxy.grants) == 0  # the turn is over: its token is gone
