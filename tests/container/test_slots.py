"""The runner slots (container/slots.py): one cap on the turns alive at once, for every backend.

The attack of issue 28: 20 mentions at once on the local backend started a runner each (39
processes, 3.9 GB on 2 cores). Here the engine opens 20 tasks at once on the real LocalBackend,
whose runner program logs when each run starts and ends: never more than `turns_at_once` are
alive, and the turns that wait show "waiting for a runner slot" until they start.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from container import slots
from container.local import LocalBackend
from container.slots import STARTING, WAITING, TurnSlots, default_turns_at_once
from container.supervision import RunFailure, RunnerOutput
from rooms.base.model import GroupPolicy, RoomRef
from rooms.base.open_caps import OpenCaps
from runners.protocol import PROTOCOL, RunEvent
from tests.fakes.engine_kit import engine_kit

pytestmark = pytest.mark.timeout(120)

COUNTED_RUNNER = Path(__file__).resolve().parents[1] / "fakes" / "counted_runner.py"
GiB = 1024**3


@pytest.mark.parametrize(
    ("cpus", "memory", "expected"),
    [
        (2, 23 * GiB, 4),  # two per CPU
        (16, 8 * GiB, 8),  # memory-bound: one per GiB
        (1, None, 2),  # memory unknown: the CPUs decide
        (4, GiB // 2, 1),  # less than a GiB: still one
        (0, 64 * GiB, 2),  # a CPU count of 0 is read as 1
    ],
)
def test_default_is_two_per_cpu_at_most_one_per_gib(
    cpus: int, memory: int | None, expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slots, "memory_bytes", lambda: memory)
    assert default_turns_at_once(cpus) == expected


def test_the_default_of_this_machine_follows_the_rule() -> None:
    cpus, memory = slots.cpus_available(), slots.memory_bytes()
    assert default_turns_at_once() == default_turns_at_once(cpus, memory) >= 1


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        TurnSlots(0)


def peak(log: Path) -> tuple[int, int]:
    """(most runs alive at once, runs started) from the counted runner's log."""
    alive = most = started = 0
    for line in log.read_text().splitlines():
        word = line.split()[0]
        alive += 1 if word == "start" else -1
        started += word == "start"
        most = max(most, alive)
    return most, started


async def test_twenty_tasks_at_once_never_run_more_than_turns_at_once(tmp_path: Path) -> None:
    cap, tasks = 3, 20
    log = tmp_path / "runs.log"
    backend = LocalBackend(
        # Each run holds on until all 20 owners are alive at once, or nothing started or
        # ended for a quarter of a second: with no cap, all of them would be.
        env={
            "COUNTED_RUNNER_LOG": str(log),
            "COUNTED_RUNNER_ENOUGH": str(tasks - 1),
            "COUNTED_RUNNER_QUIET_S": "0.25",
        },
        command=[sys.executable, "-P", str(COUNTED_RUNNER)],
        kill_grace_s=1.0,
        turns_at_once=cap,
    )
    policy = replace(
        GroupPolicy(name="g"),
        approvers=frozenset({"boss"}),
        open_caps=OpenCaps(per_channel=tasks, per_person=tasks),
    )
    rooms = [RoomRef("test", "C1", f"T{i}") for i in range(tasks)]
    async with engine_kit(tmp_path, policy=policy, runner=backend) as kit:  # type: ignore[arg-type]
        await asyncio.gather(*(kit.say(f"task {i}", room=r) for i, r in enumerate(rooms)))
        await kit.settle(timeout=100)
        statuses = [(await kit.task(i + 1)).status for i in range(tasks)]
        turns = [t for i in range(tasks) for t in await kit.store.turns(i + 1)]

    assert statuses == ["closed"] * tasks  # every owner and reviewer turn ran
    most, started = peak(log)
    assert started == len(turns) >= 2 * tasks
    assert most <= cap, f"{most} runners alive at once, the cap is {cap}"

    progress = [p for p in kit.platform.posts if not p.message.outbox_id]
    texts = [[p.message.text, *p.edits] for p in progress]
    waited = [t for t in texts if WAITING in t[0]]
    # 40 turns through 3 slots: at least the 17 first owner turns past the cap had to wait.
    assert len(waited) >= tasks - cap, texts
    for shown in waited:
        # Shown as the message's first text, replaced by the runner starting, never shown again.
        assert STARTING in shown[1], shown
        assert not any(WAITING in text for text in shown[1:]), shown
        assert "finished" in shown[-1], shown


async def _slow(started: list[str], name: str, gate: asyncio.Event) -> AsyncIterator[RunEvent]:
    started.append(name)
    await gate.wait()
    yield RunEvent(kind="final", text=name)


async def test_a_turn_that_leaves_the_queue_gives_its_place_up() -> None:
    slots = TurnSlots(1)
    gate = asyncio.Event()
    started: list[str] = []
    first = slots.run(lambda: _slow(started, "first", gate))
    first_task = asyncio.ensure_future(anext(first))
    await asyncio.sleep(0)
    waiting = slots.run(lambda: _slow(started, "second", gate))
    queued = await anext(waiting)
    assert queued.kind == "queued" and WAITING in queued.text
    await waiting.aclose()  # the room's turn was stopped while it waited
    assert slots.waiting == 0
    gate.set()
    assert (await first_task).text == "first"
    await first.aclose()
    third = [e async for e in slots.run(lambda: _slow(started, "third", gate))]
    assert [e.kind for e in third] == ["final"]  # the slot was free: no queued event
    assert started == ["first", "third"]
    assert (slots.running, slots.waiting) == (0, 0)


def test_a_runner_may_not_claim_to_be_queued() -> None:
    # `queued` keeps the engine's safety net from starting: a backend's word, never a runner's.
    output = RunnerOutput(1024, 1024)
    with pytest.raises(RunFailure) as failure:
        list(output.feed(b'{"kind": "queued", "text": "waiting for a runner slot"}\n'))
    assert failure.value.code == PROTOCOL
