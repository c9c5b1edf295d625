"""Turns of a real agent CLI (Claude Code, Codex) run by the real `python -m runners` through the
real LocalBackend against a fake model API, as tests/runners/test_claude_live.py,
tests/runners/test_codex_local.py and the turn benchmarks (tests/bench) run them.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from container.local import LocalBackend
from runners.protocol import RunEvent, RunRequest, RunSpec
from tests.fakes.codex import CODEX_BIN


def live_spec(
    agent: str, workspace: Path, base_env: Mapping[str, str], /, **request: Any
) -> RunSpec:
    """A turn of `agent` in `workspace` in group "g", 60 s idle and 120 s hard timeout. Its
    environment is `base_env` with `request["env"]` on top; the rest of `request` are the
    RunRequest's fields."""
    extra = request.pop("env", {})
    return RunSpec(
        group="g",
        agent=agent,
        request=RunRequest(**request),
        workspace=str(workspace),
        env={**base_env, **extra},
        idle_timeout_s=60,
        hard_timeout_s=120,
    )


def codex_home_env(home: Path) -> dict[str, str]:
    """What the Codex runner needs beside the fake's variables: a private HOME and CODEX_HOME,
    and the binary."""
    assert CODEX_BIN is not None, "no Codex CLI: set CODEX_BIN or run tests/fakes/install_codex.sh"
    return {"HOME": str(home), "CODEX_HOME": str(home / "codex"), "CODEX_BIN": CODEX_BIN}


async def collect(spec: RunSpec, backend: LocalBackend | None = None) -> list[RunEvent]:
    return [event async for event in (backend or LocalBackend()).run(spec)]


def only(events: list[RunEvent], kind: str) -> list[RunEvent]:
    return [e for e in events if e.kind == kind]


def clock_from_first_call(fake: Any, patience_s: float = 60.0) -> Callable[[], float]:
    """A LocalBackend clock that stands at 0 until `fake` (a ScriptedServer) has been asked its
    first model call, then runs in seconds: an idle timeout on it counts from the moment the
    agent CLI asked the model, not from its start-up, which a loaded machine stretches. A CLI
    that never asks starts it after `patience_s`, so the timeouts still end that run."""
    created = time.monotonic()
    started: list[float] = []

    def now() -> float:
        if not started:
            if not fake.calls and time.monotonic() - created < patience_s:
                return 0.0
            started.append(time.monotonic())
        return time.monotonic() - started[0]

    return now


# ---------------------------------------------------------------------------- processes


def running(pid: int) -> bool:
    """Whether `pid` is a living process (a zombie is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def processes_with_env(marker: str) -> list[int]:
    """Living processes whose environment has `marker` (a runner and its agent CLI)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if f"{marker}=".encode() in environ and running(int(entry)):
            found.append(int(entry))
    return found


# ---------------------------------------------------------------------------- benchmarks


@contextlib.contextmanager
def scratch_dirs() -> Iterator[tuple[Path, Path]]:
    """A workspace and a HOME, both empty, removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        workspace, home = Path(tmp, "ws"), Path(tmp, "home")
        workspace.mkdir()
        home.mkdir()
        yield workspace, home


def bench_spec(agent: str, workspace: Path, env: Mapping[str, str], *, edit: bool) -> RunSpec:
    """An owner turn in group "bench" with the default timeouts; read-only unless `edit`."""
    return RunSpec(
        group="bench",
        agent=agent,
        request=RunRequest(role="owner", prompt="go", read_only=not edit),
        workspace=str(workspace),
        env=dict(env),
    )


async def timed_turn(spec: RunSpec) -> float:
    """Seconds one turn takes on a fresh LocalBackend; it must end with `final`."""
    started = time.perf_counter()
    events = await collect(spec)
    elapsed = time.perf_counter() - started
    assert events[-1].kind == "final", events[-1]
    return elapsed


def print_times(label: str, times: list[float]) -> None:
    print(
        f"{label}: median {statistics.median(times):.2f}s, "
        f"min {min(times):.2f}s, max {max(times):.2f}s over {len(times)}"
    )


async def time_turns(make_spec: Callable[[bool], RunSpec], repeats: int, edit_label: str) -> None:
    """Prints the times of `repeats` text-only turns, then of `repeats` turns that edit;
    `make_spec(edit)` prepares each turn (outside the timed part)."""
    for edit in (False, True):
        times = [await timed_turn(make_spec(edit)) for _ in range(repeats)]
        print_times(edit_label if edit else "text-only turn", times)
