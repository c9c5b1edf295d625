"""A remote engine over `tcp://` with TLS client certificates (container/endpoints.py), against
the session's real engine behind a TLS front on loopback (tests/fakes/tls_relay.py) that, like
`dockerd --tlsverify`, accepts only clients whose certificate its CA signed.

- with the bot's certificate the engine answers, holds the image, and runs a turn: the exec's
  request and its output stream pass over TLS;
- with a certificate of another CA, or none, the engine does not answer (`answers` says why).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from container.docker_backend import DockerBackend
from container.docker_pool import DockerConfig
from container.endpoints import Endpoint, answers
from tests.container.conftest import FAKE_RUNNER, PROGRAMS, collect, spec
from tests.fakes.tls import FakeCA, client_certificate, fake_ca
from tests.fakes.tls_relay import tls_relay

pytestmark = [pytest.mark.engine, pytest.mark.timeout(180)]

NAME = "localhost"


@pytest.fixture
def ca(tmp_path: Path) -> FakeCA:
    return fake_ca(tmp_path, NAME)


@pytest.fixture
def remote(ca: FakeCA, docker_client: Any) -> Iterator[str]:
    """tcp://localhost:<port>: the session's engine behind the TLS front."""
    socket_path = docker_client.api.adapters.get("http+docker://").socket_path
    with tls_relay(ca, socket_path) as port:
        yield f"tcp://{NAME}:{port}"


def endpoint(remote: str, ca: FakeCA, cert: Path, key: Path) -> Endpoint:
    return Endpoint(remote, str(ca.ca_file), str(cert), str(key))


async def test_a_tls_engine_answers_and_runs_a_turn(
    remote: str, ca: FakeCA, tmp_path: Path, runner_image: str
) -> None:
    cert, key = client_certificate(ca, tmp_path)
    engine = endpoint(remote, ca, cert, key)
    assert engine.problems() == []
    assert answers(engine, runner_image) is None
    config = DockerConfig(
        image=runner_image,
        instance=f"test-{uuid.uuid4().hex[:10]}",
        mem_limit="256m",
        extra_mounts={str(PROGRAMS): "/opt/test-runners"},
    )
    backend = DockerBackend(engine.connect(), config, command=FAKE_RUNNER)
    try:
        events = await collect(backend, spec("echo over tls"))
        assert [e.text for e in events if e.kind == "final"] == ["over tls"], events
        assert not [e for e in events if e.kind == "error"]
    finally:
        assert await backend.close() == 1
        backend.client.close()


def test_a_certificate_of_another_ca_is_refused(
    remote: str, ca: FakeCA, tmp_path: Path, runner_image: str
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    stranger = fake_ca(other, NAME)
    cert, key = client_certificate(stranger, other)
    refused = answers(endpoint(remote, ca, cert, key), runner_image)
    assert refused is not None and "SSL" in refused.upper(), refused
    # Without the engine's CA, the client does not trust the engine either.
    mine = client_certificate(ca, tmp_path)
    distrusted = answers(Endpoint(remote, str(stranger.ca_file), *map(str, mine)), runner_image)
    assert distrusted is not None and "CERTIFICATE" in distrusted.upper(), distrusted
