"""Container turn latency and throughput on a real engine (Podman, or DOCKER_HOST when it answers).

    .venv/bin/python -m tests.bench.bench_containers [--turns 20] [--rooms 1,5,10] [--switches 20]
        [--only latency,throughput,switch]

Needs what the container tests need (`python -m container.image fetch` once; the images are built
and cached on first use). Runner: the protocol-speaking test program
(tests/container/programs/fake_runner.py, prompt "echo"), so the figures are the backend's cost
per turn, not a model's. Printed:

1. turn latency, same run, same program and hardening: an exec in the long-lived container of
   the room (DockerBackend, as production runs turns) versus a fresh container per turn
   (create, start, run, wait, remove), and their ratio; the first exec turn (which creates the
   container) is shown apart;
2. throughput with 1, 5 and 10 concurrent rooms, each running `--turns` turns in order, under the
   a cap of 5 turns at once (`turns_at_once`): turns/s and the median turn latency;
3. two tasks of one group taking turns (owner, each in its own git worktree with its metadata
   mounted), `--switches` turns alternating after each task's first: with main's rule before
   this change (one container per (group, role), whose config hash names the workspace, so each
   switch recreates it and loses HOME) against today's (one per (group, role, workspace)), in the
   same run, with one task's turns alone as the floor: median turn, total, the ratio, and the
   cost of a switch (median turn minus the floor's).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from container.docker_backend import DockerBackend
from container.docker_pool import ContainerPool, DockerConfig, Key, Placement
from container.image import build_image, default_inputs
from runners.protocol import RunRequest, RunSpec, encode
from tests.container.conftest import FAKE_RUNNER, PROGRAMS, TEST_IMAGE
from tests.fakes.podman import engine, ensure_base_image
from tests.rooms.git_helpers import git, make_repo

SECTIONS = frozenset({"latency", "throughput", "switch"})
THROUGHPUT_CAP = 5  # turns at once (the old Docker default), so figures stay comparable


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
        client,
        _config(image, f"bench-{uuid.uuid4().hex[:8]}"),
        command=FAKE_RUNNER,
        turns_at_once=THROUGHPUT_CAP,
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


class _MainRule(ContainerPool):
    """main's rule before containers were per workspace: one per (group, role)."""

    def key(self, placement: Placement) -> Key:
        return (placement.group, placement.role, "")


def _task_specs(root: Path) -> list[RunSpec]:
    """The owner's spec of two tasks of one group, each in its own worktree (made as
    rooms/work/worktrees.py makes them, owned by the container user)."""
    repo = make_repo(root / "checkout")
    common = os.path.realpath(repo / ".git")
    specs = []
    for name in ("1-one", "2-two"):
        path = root / "worktrees" / name
        git(repo, "worktree", "add", "--quiet", "-b", f"tribunal/{name}", str(path), "HEAD")
        subprocess.run(["chown", "-R", "1000:1000", str(path)], check=True)
        admin = os.path.join(common, "worktrees", name)
        base = _spec("switch")
        specs.append(
            base.model_copy(
                update={"workspace": str(path), "git_dir": admin, "git_common_dir": common}
            )
        )
    return specs


async def switching(client: Any, image: str, switches: int) -> None:
    rules = ("before", "after", "floor")
    with tempfile.TemporaryDirectory(prefix="bench-switch-") as tmp:
        one, two = _task_specs(Path(tmp))
        orders = {
            "before": [one, two] * (switches // 2 + 2),
            "after": [one, two] * (switches // 2 + 2),
            "floor": [one] * (switches + 2),
        }
        backends = {}
        for rule in rules:
            config = _config(image, f"bench-{uuid.uuid4().hex[:8]}")
            backends[rule] = DockerBackend(client, config, command=FAKE_RUNNER)
            if rule == "before":
                backends[rule].pool = _MainRule(client, config)
        results: dict[str, list[float]] = {rule: [] for rule in rules}
        try:
            firsts = {rule: await _turn(backends[rule], orders[rule][0]) for rule in rules}
            for rule in rules:  # each task's first turn creates its container
                await _turn(backends[rule], orders[rule][1])
            # Round-robin over the three, turn by turn: the machine's noise falls on all alike.
            for index in range(2, switches + 2):
                for rule in rules:
                    results[rule].append(await _turn(backends[rule], orders[rule][index]))
        finally:
            for backend in backends.values():
                await backend.close()
    floor = statistics.median(results["floor"])
    print(f"\ntwo tasks of one group alternating, {switches} turns after each task's first (s)")
    print(f"  {'':34} {'median':>7} {'p90':>7} {'total':>7} {'per switch':>10}")
    labels = {
        "before": "main's rule: per (group, role)",
        "after": "per (group, role, workspace)",
        "floor": "one task alone (no switch)",
    }
    for rule in ("before", "after", "floor"):
        times = results[rule]
        median = statistics.median(times)
        cost = "" if rule == "floor" else f"{median - floor:10.3f}"
        print(f"  {labels[rule]:34} {median:7.3f} {_p90(times):7.3f} {sum(times):7.2f} {cost}")
    before, after = statistics.median(results["before"]), statistics.median(results["after"])
    total = sum(results["before"]) / sum(results["after"])
    print(f"  ratio before / after: {before / after:.2f}x median, {total:.2f}x total")
    print(f"  first turn (creates a container): {firsts['after']:.3f}")


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]


async def main_async(
    turns: int, room_counts: list[int], switches: int = 20, only: frozenset[str] = SECTIONS
) -> None:
    with engine(timeout_s=600) as client:
        if client is None:
            raise SystemExit("no engine: neither DOCKER_HOST nor podman")
        base = ensure_base_image(client)
        build_image(client, tag=TEST_IMAGE, base=base, inputs=default_inputs())
        version = client.version()
        print(f"engine: {version.get('Version')} (API {version.get('ApiVersion')})")
        if "latency" in only:
            await latency(client, TEST_IMAGE, turns)
        if "throughput" in only:
            print(f"\nthroughput, {turns} turns per room, turns_at_once {THROUGHPUT_CAP}")
            print(f"  {'rooms':>5} {'turns/s':>8} {'median turn s':>14}")
            for rooms in room_counts:
                rate, median = await throughput(client, TEST_IMAGE, rooms, turns)
                print(f"  {rooms:>5} {rate:>8.2f} {median:>14.3f}")
        if "switch" in only:
            await switching(client, TEST_IMAGE, switches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rooms", default="1,5,10")
    parser.add_argument("--switches", type=int, default=20)
    parser.add_argument("--only", default=",".join(sorted(SECTIONS)))
    args = parser.parse_args()
    only = frozenset(args.only.split(","))
    if not only <= SECTIONS:
        parser.error(f"--only takes some of {', '.join(sorted(SECTIONS))}")
    rooms = [int(r) for r in args.rooms.split(",")]
    asyncio.run(main_async(args.turns, rooms, args.switches, only))


if __name__ == "__main__":
    main()
