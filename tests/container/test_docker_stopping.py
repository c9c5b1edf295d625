"""How the Docker backend stops a run, and whose run an out-of-memory kill is (real engine).

- A stopped run (closed, cancelled, timed out) gets SIGTERM first, so the runner can end its
  agent CLI and what it started, and SIGKILL only after `kill_grace_s`; a runner that ignores
  SIGTERM is killed when the grace is over.
- The container's OOM-kill counter comes with each run (the exec wrapper's first stderr line)
  and is read again after a run that failed: a run whose child was killed by the memory limit
  but that still answered is not charged for it (the next run's start logs it), and the next
  run's own failure is not blamed on the memory limit.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from runners.protocol import CRASHED
from tests.container.conftest import MakeBackend, collect, spec

pytestmark = [pytest.mark.engine, pytest.mark.timeout(180)]


async def test_a_stopped_run_gets_sigterm_before_sigkill(
    make_backend: MakeBackend, workspace: Path
) -> None:
    backend = make_backend()
    backend.kill_grace_s = 3.0
    stream = backend.run(spec("term /workspace/term.txt", workspace=workspace, idle_timeout_s=60))
    assert [(await anext(stream)).kind, (await anext(stream)).kind] == ["session", "progress"]
    await stream.aclose()
    assert (workspace / "term.txt").read_text() == "terminated"


async def test_a_runner_ignoring_sigterm_is_killed_after_the_grace(
    make_backend: MakeBackend,
) -> None:
    backend = make_backend()
    backend.kill_grace_s = 1.0
    started = time.monotonic()
    events = await collect(backend, spec("ignoreterm", idle_timeout_s=1.0))
    elapsed = time.monotonic() - started
    assert events[-1].kind == "error" and events[-1].code == "idle_timeout"
    assert elapsed >= 2.0  # 1 s idle, then the whole 1 s grace
    after = await collect(backend, spec("echo next"))
    assert [e.text for e in after if e.kind == "final"] == ["next"]


async def test_an_oom_kill_is_charged_to_the_run_it_happened_in(
    make_backend: MakeBackend, docker_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    backend = make_backend(mem_limit="128m")
    first = await collect(backend, spec("oomchild_ok 1024"))
    assert first[-1].kind == "final", first  # it answered: its child's death does not fail it
    # The next run crashes for a reason of its own: not out_of_memory.
    with caplog.at_level("WARNING", logger="container.docker_backend"):
        second = await collect(backend, spec("crash"))
    assert second[-1].kind == "error" and second[-1].code == CRASHED, second
    assert "a process of an earlier run" in caplog.text  # seen as the second run began
