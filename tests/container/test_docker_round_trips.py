"""What an exec turn asks the engine (issue 28): counted requests, not timings.

A turn in a container the backend already holds costs exec create, exec start and one exec
inspect (a bare exec costs two): no inspect of the container, no exec of its own to read the
OOM-kill counter. The cached container state must not hide a dead container: killed or removed
between two turns, the next turn still runs, in a new container.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.container.conftest import MakeBackend, collect, spec
from tests.fakes.api_calls import count_requests

pytestmark = [pytest.mark.engine, pytest.mark.timeout(300)]

WARM_TURN = [
    ("POST", "/containers/{id}/exec"),
    ("POST", "/exec/{id}/start"),
    ("GET", "/exec/{id}/json"),
]


def finals(events: list[Any]) -> list[str]:
    return [e.text for e in events if e.kind == "final"]


async def test_a_warm_turn_is_one_exec_and_its_exit_status(
    make_backend: MakeBackend, docker_client: Any
) -> None:
    backend = make_backend()
    requests = count_requests(docker_client)
    assert finals(await collect(backend, spec("echo first"))) == ["first"]
    requests.take()
    for n in range(3):
        assert finals(await collect(backend, spec(f"echo {n}"))) == [str(n)]
        assert requests.take() == WARM_TURN


@pytest.mark.parametrize("how", ["kill", "remove"])
async def test_a_container_that_died_between_turns_is_replaced(
    make_backend: MakeBackend, docker_client: Any, how: str
) -> None:
    backend = make_backend()
    assert finals(await collect(backend, spec("echo before"))) == ["before"]
    [old] = backend.pool.held().values()
    container = docker_client.containers.get(old)
    if how == "kill":
        container.kill()
    else:
        container.remove(force=True)
    after = await collect(backend, spec("echo after"))
    assert finals(after) == ["after"], after
    [new] = backend.pool.held().values()
    assert new != old
    assert docker_client.containers.get(new).status == "running"
    assert old not in {c.id for c in docker_client.containers.list(all=True)}
