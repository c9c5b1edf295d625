"""A turn's progress message while it waits for a runner slot (a backend's `queued` event), and
the engine's safety net, which does not count that wait as the turn's time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rooms.base.model import GroupPolicy
from rooms.core import turns as turns_module
from rooms.core.progress import Progress
from runners.protocol import RunEvent, RunSpec
from tests.fakes.engine_kit import ROOM, engine_kit
from tests.fakes.runner import ScriptedRunner


async def test_the_wait_is_replaced_at_once_when_the_turn_starts() -> None:
    platform = _Platform()
    progress = Progress(platform, ROOM, "owner", 1)
    await progress.queued("waiting for a runner slot")
    # Within the edit throttle's second: the wait must not stay on show while the runner works.
    await progress.update("got a runner slot; starting the runner")
    await progress.update("reading files")  # throttled as usual
    await progress.finish("finished")
    assert platform.texts == [
        "⏳ owner is waiting (turn 1): waiting for a runner slot",
        "⏳ owner is working (turn 1): got a runner slot; starting the runner",
        "owner finished (turn 1, 2 steps)",  # the wait is no step
    ]


class _Platform:
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def deliver(self, message: object) -> str:
        self.texts.append(getattr(message, "text", ""))
        return "m1"


class QueuedRunner(ScriptedRunner):
    """A backend that keeps the turn queued for a while before its runner starts."""

    def __init__(self, wait_s: float, **kw: object) -> None:
        super().__init__({"owner": ["DONE"], "reviewer": ["APPROVED"]}, **kw)  # type: ignore[arg-type]
        self.wait_s = wait_s

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        yield RunEvent(kind="queued", text="waiting for a runner slot")
        await asyncio.sleep(self.wait_s)
        async for event in super().run(spec):
            yield event


async def test_a_queued_turn_is_not_timed_out_for_its_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine's safety net is hard_timeout_s (+ a margin, 0 here) from the runner's first
    # event; the wait for a slot (4× that at most) is not the runner's time.
    monkeypatch.setattr(turns_module, "SAFETY_MARGIN_S", 0.0)
    policy = GroupPolicy(name="g", approvers=frozenset({"boss"}), hard_timeout_s=1.0)
    async with engine_kit(tmp_path, policy=policy, runner=QueuedRunner(1.5)) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        turns = await kit.store.turns(1)
        assert [(t.role, t.status) for t in turns][:2] == [
            ("owner", "done"),
            ("reviewer", "done"),
        ], [t.error for t in turns]
