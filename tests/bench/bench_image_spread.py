"""The runner image onto one more engine: built there, or copied (save on the engine that has it,
load on the new one). `tribunal image build` with `[docker] engines` copies
(container/image_spread.py); this is the measurement behind that choice.

    .venv/bin/python -m tests.bench.bench_image_spread

On the engine the container tests use (engine A: Podman, or DOCKER_HOST when it answers), the
full runner image of the tests (localhost/tribunal-runner:test, built FROM the debootstrap
base, made first if missing). Two fresh Podman services, each with empty storage of its own
(tests/fakes/podman.py `private_engine(share_images=False)`), stand for two new hosts:

- build: the base image is copied to the first (save on A, load there: what a registry pull
  would do for a normal user) and then the runner image is built there from the same inputs
  (`build_image`, as `tribunal image build` does on one engine);
- copy: `spread_image` from A to the second: the image saved on A into a spool file, loaded
  there (what `tribunal image build` does for every engine after the first).

Printed: for each round the copy's line, then medians over the rounds (`--repeats`, 2 by
default, the order of the two ways alternated) and the ratio of each way to the copy. The new
engines and their storage are removed after each round.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from container.endpoints import Endpoint
from container.image import build_image, default_inputs
from container.image_spread import spread_image
from tests.container.conftest import TEST_IMAGE
from tests.container.test_bot_docker import docker_host_of
from tests.fakes.podman import engine, ensure_base_image, private_engine, unmount_under


def _copy(source: Any, target: Any, name: str, spool: Path) -> tuple[float, float]:
    """(save s, load s) of image `name` from one client to another through a file."""
    started = time.perf_counter()
    with spool.open("wb") as out:
        for chunk in source.images.get(name).save(named=True):
            out.write(chunk)
    saved = time.perf_counter()
    with spool.open("rb") as data:
        target.images.load(data.read())
    return saved - started, time.perf_counter() - saved


def _round(client: Any, base: str, inputs: Any, root: Path, copy_first: bool) -> dict[str, Any]:
    """One measurement of each way, on two fresh engines, in the order given."""
    a = docker_host_of(client)
    first = private_engine(root / "build", share_images=False)
    second = private_engine(root / "copy", share_images=False)
    found: dict[str, Any] = {}

    def build_there() -> None:
        fresh = Endpoint(first.docker_host).connect(timeout=1800)
        try:
            found["base"] = _copy(client, fresh, base, root / "base.tar")
            started = time.perf_counter()
            build_image(fresh, tag=TEST_IMAGE, base=base, inputs=inputs)
            found["build"] = time.perf_counter() - started
        finally:
            fresh.close()

    def copy_there() -> None:
        started = time.perf_counter()
        found["outcomes"] = spread_image(
            [Endpoint(a), Endpoint(second.docker_host)],
            TEST_IMAGE,
            lambda c: build_image(c, tag=TEST_IMAGE, base=base, inputs=inputs),
            spool_dir=str(root),
        )
        found["copy"] = time.perf_counter() - started

    try:
        first.start()
        second.start()
        for step in (copy_there, build_there) if copy_first else (build_there, copy_there):
            step()
    finally:
        first.stop()
        second.stop()
        unmount_under(root)
    outcomes = found["outcomes"]
    assert [o.action for o in outcomes] == ["up to date", "loaded"], outcomes
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2, help="rounds, alternating the order")
    repeats = parser.parse_args().repeats
    rounds = []
    with engine(timeout_s=1800) as client:
        if client is None:
            raise SystemExit("no engine: neither DOCKER_HOST nor podman")
        base = ensure_base_image(client)
        inputs = default_inputs()
        build_image(client, tag=TEST_IMAGE, base=base, inputs=inputs)
        size = client.images.get(TEST_IMAGE).attrs.get("Size", 0) / 1e9
        for n in range(repeats):
            with tempfile.TemporaryDirectory(prefix="bench-image-spread-") as tmp:
                rounds.append(_round(client, base, inputs, Path(tmp), copy_first=n % 2 == 0))
    print(f"\nthe runner image ({size:.2f} GB) onto one more Podman engine with empty storage")
    for found in rounds:
        print(f"  {found['outcomes'][1].line}")
    copied = statistics.median(f["copy"] for f in rounds)
    built = statistics.median(f["build"] for f in rounds)
    base_s = statistics.median(sum(f["base"]) for f in rounds)
    rows = [
        ("copy: save on A + load (spread_image)", copied),
        ("build there, base already there", built),
        ("build there + copy its base first", built + base_s),
    ]
    print(f"  medians of {repeats} round(s), the order alternated")
    print(f"  {'way':44} {'seconds':>8} {'÷ copy':>7}")
    for name, seconds in rows:
        print(f"  {name:44} {seconds:8.1f} {seconds / copied:6.2f}×")
    print(f"  (the base alone, saved and loaded: {base_s:.1f} s)")


if __name__ == "__main__":
    main()
