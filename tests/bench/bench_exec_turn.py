"""An exec turn against a bare exec in the same container: what the DockerBackend adds per turn.

    .venv/bin/python -m tests.bench.bench_exec_turn [--turns 30]

On the engine the container tests use (Podman, or DOCKER_HOST when it answers), with the test
image. Alternated, turn by turn, in the room's one long-lived container:

- exec turn: a DockerBackend turn running the protocol-speaking test runner
  (tests/container/programs/fake_runner.py, prompt "echo"), from `run()` to its last event;
- bare exec: `python3 -c pass` exec'd in the same container and waited for (exec create and
  start, output read to the end), the floor any exec turn pays;
- bare runner: the same test runner with the same request, exec'd bare the same way
  (`sh -c 'echo REQUEST | python3 fake_runner.py claude'`): what the program itself costs, so
  the rest of the exec turn is the backend's.

Printed: medians, the ratios exec turn / bare exec (issue 28 wants ≤ 1.3×) and exec turn /
bare runner, and the engine requests of one warm turn (tests/fakes/api_calls.py), by method
and path.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import statistics
import time
import uuid
from typing import Any

from container.docker_backend import DockerBackend
from container.image import build_image, default_inputs
from runners.protocol import encode
from tests.bench.bench_containers import _config, _spec, _turn
from tests.container.conftest import FAKE_RUNNER, TEST_IMAGE
from tests.fakes.api_calls import count_requests
from tests.fakes.podman import engine, ensure_base_image


def _bare_exec(api: Any, container_id: str, argv: list[str]) -> float:
    started = time.perf_counter()
    created = api.exec_create(container_id, argv)
    api.exec_start(created["Id"])
    return time.perf_counter() - started


async def main_async(turns: int) -> None:
    with engine(timeout_s=600) as client:
        if client is None:
            raise SystemExit("no engine: neither DOCKER_HOST nor podman")
        base = ensure_base_image(client)
        build_image(client, tag=TEST_IMAGE, base=base, inputs=default_inputs())
        requests = count_requests(client)
        config = _config(TEST_IMAGE, f"bench-{uuid.uuid4().hex[:8]}")
        backend = DockerBackend(client, config, command=FAKE_RUNNER)
        spec = _spec("exec-turn")
        try:
            await _turn(backend, spec)  # creates the container
            [container_id] = backend.pool.held().values()
            await _turn(backend, spec)
            requests.take()
            await _turn(backend, spec)
            per_turn = requests.take()
            request = encode(spec.request).strip()
            runner = ["sh", "-c", f"echo '{request}' | {' '.join(FAKE_RUNNER)} claude"]
            execs, bares, runners = [], [], []
            for _ in range(turns):
                execs.append(await _turn(backend, spec))
                bare = ["python3", "-c", "pass"]
                bares.append(await asyncio.to_thread(_bare_exec, client.api, container_id, bare))
                runners.append(
                    await asyncio.to_thread(_bare_exec, client.api, container_id, runner)
                )
        finally:
            await backend.close()
    exec_median, bare_median = statistics.median(execs), statistics.median(bares)
    runner_median = statistics.median(runners)
    print(f"\n{turns} turns alternated in one container (median seconds)")
    print(f"  {'exec turn (DockerBackend)':30} {exec_median:7.3f}")
    print(f"  {'bare exec python3 -c pass':30} {bare_median:7.3f}")
    print(f"  {'bare exec of the test runner':30} {runner_median:7.3f}")
    print(f"  ratio exec turn / bare exec: {exec_median / bare_median:.2f}x (wanted <= 1.3x)")
    print(f"  ratio exec turn / bare runner: {exec_median / runner_median:.2f}x")
    print(f"\nengine requests of one warm turn: {len(per_turn)}")
    for (method, path), n in collections.Counter(per_turn).items():
        print(f"  {n} x {method} {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(main_async(args.turns))


if __name__ == "__main__":
    main()
