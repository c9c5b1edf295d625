"""Container turn latency and throughput on a real engine (Podman, or DOCKER_HOST when it answers).

    .venv/bin/python -m tests.bench.bench_containers [--turns 20] [--rooms 1,5,10]

Needs what the container tests need (`python -m container.image fetch` once; the images are built
and cached on first use). Runner: the protocol-speaking test program
(tests/container/programs/fake_runner.py, prompt "echo"), so the figures are the backend's cost
per turn, not a model's. Printed:

1. turn latency, same run, same program and hardening: an exec in the long-lived container of
   the room (DockerBackend, as production runs turns) versus a fresh container per turn
   (create, start, run, wait, remove), and their ratio; the first exec turn (which creates the
   container) is shown apart;
2. throughput with 1, 5 and 10 concurrent rooms, each running `--turns` turns in order, under the
   backend's global limit of 5 concurrent turns: turns/s and the median turn latency.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from typing import Any

from container.docker_backend import DockerBackend
from container.docker_pool import DockerConfig
from container.image import build_image, default_inputs
from runners.protocol import RunRequest, RunSpec, encode
from tests.container.conftest import FAKE_RUNNER, PROGRAMS, TEST_IMAGE
from tests.fakes.podman import engine, ensure_base_image


def _spec(group: str, prompt: str = "echo hi") -> RunSpec:
    return RunSpec(group=group, agent="claude", request=RunRequest(role="owner", prompt=prompt))


def _config(image: str, instance: str) -> DockerConfig:
    return DockerConfig(
        image=image,
        instance=instance,
        network_mode="none",
        mem_limit="512m",
        extra_mounts={str(PROGRAMS): "/opt/test-runners"},
    )


async def _turn(backend: DockerBackend, spec: RunSpec) -> float:
    started = time.perf_counter()
    kinds = [event.kind async for event in backend.run(spec)]
    if kinds[-1] != "final":
        raise RuntimeError(f"turn failed: {kinds}")
    return time.perf_counter() - started


def _fresh_container_turn(client: Any, config: DockerConfig) -> float:
    """One turn in a container made for it, with the same limits and the request on stdin."""
    request = encode(_spec("fresh").request)
    started = time.perf_counter()
    output = client.containers.run(
        config.image,
        ["sh", "-c", f'printf "%s" "$REQ" | {" ".join(FAKE_RUNNER)} claude'],
        environment={"REQ": request},
        remove=True,
        init=True,
        user=config.user,
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        mem_limit=config.mem_limit,
        memswap_limit=config.mem_limit,
        nano_cpus=config.nano_cpus,
        pids_limit=config.pids_limit,
        network_mode=config.network_mode,
        tmpfs={"/tmp": "rw,size=64m,mode=1777", config.home: "rw,size=64m,mode=1777"},
        volumes={str(PROGRAMS): {"bind": "/opt/test-runners", "mode": "ro"}},
    )
    elapsed = time.perf_counter() - started
    if b'"final"' not in output:
        raise RuntimeError(f"fresh-container turn failed: {output[:300]!r}")
    return elapsed


async def latency(client: Any, image: str, turns: int) -> None:
    backend = DockerBackend(
        client, _config(image, f"bench-{uuid.uuid4().hex[:8]}"), command=FAKE_RUNNER
    )
    try:
        first = await _turn(backend, _spec("latency"))
        execs = [await _turn(backend, _spec("latency")) for _ in range(turns)]
    finally:
        await backend.close()
    fresh = [
        await asyncio.to_thread(_fresh_container_turn, client, backend.config) for _ in range(turns)
    ]
    exec_median, fresh_median = statistics.median(execs), statistics.median(fresh)
    print(f"\nturn latency over {turns} turns (median / p90, seconds)")
    print(f"  {'exec in long-lived container':34} {exec_median:6.3f} / {_p90(execs):6.3f}")
    print(f"  {'fresh container per turn':34} {fresh_median:6.3f} / {_p90(fresh):6.3f}")
    print(f"  {'first exec (creates the container)':34} {first:6.3f}")
    print(f"  ratio fresh / exec: {fresh_median / exec_median:.2f}x")


async def throughput(client: Any, image: str, rooms: int, turns: int) -> tuple[float, float]:
    backend = DockerBackend(
        client, _config(image, f"bench-{uuid.uuid4().hex[:8]}"), command=FAKE_RUNNER
    )
    try:
        # Containers first, so the figure is turns, not container creation.
        await asyncio.gather(*(_turn(backend, _spec(f"room-{r}")) for r in range(rooms)))
        latencies: list[float] = []

        async def room(index: int) -> None:
            for _ in range(turns):
                latencies.append(await _turn(backend, _spec(f"room-{index}")))

        started = time.perf_counter()
        await asyncio.gather(*(room(r) for r in range(rooms)))
        elapsed = time.perf_counter() - started
    finally:
        await backend.close()
    return rooms * turns / elapsed, statistics.median(latencies)


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]


async def main_async(turns: int, room_counts: list[int]) -> None:
    with engine(timeout_s=600) as client:
        if client is None:
            raise SystemExit("no engine: neither DOCKER_HOST nor podman")
        base = ensure_base_image(client)
        build_image(client, tag=TEST_IMAGE, base=base, inputs=default_inputs())
        version = client.version()
        print(f"engine: {version.get('Version')} (API {version.get('ApiVersion')})")
        await latency(client, TEST_IMAGE, turns)
        print(f"\nthroughput, {turns} turns per room, global limit 5")
        print(f"  {'rooms':>5} {'turns/s':>8} {'median turn s':>14}")
        for rooms in room_counts:
            rate, median = await throughput(client, TEST_IMAGE, rooms, turns)
            print(f"  {rooms:>5} {rate:>8.2f} {median:>14.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rooms", default="1,5,10")
    args = parser.parse_args()
    asyncio.run(main_async(args.turns, [int(r) for r in args.rooms.split(",")]))


if __name__ == "__main__":
    main()
