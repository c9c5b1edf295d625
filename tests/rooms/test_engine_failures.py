"""Runner failures, restarts and an unreliable platform: the task state stays consistent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rooms.base.model import GroupPolicy, RoomRef
from rooms.core import turns as turns_module
from rooms.store import Store
from runners.protocol import RunEvent, RunSpec
from tests.fakes.engine_kit import ROOM, engine_kit
from tests.fakes.runner import Reply, Script, ScriptedRunner, fail, hang


async def test_a_crash_fails_the_turn_and_the_same_role_is_retried_once(tmp_path: Path) -> None:
    script: Script = {
        "owner": [fail("crashed", "runner exited with status 3"), "DONE\nsecond try", "DONE"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        turns = await kit.store.turns(1)
        assert [(t.role, t.status) for t in turns] == [
            ("owner", "failed"),
            ("owner", "done"),
            ("reviewer", "done"),
            ("owner", "done"),
        ]
        assert turns[0].error == "runner exited with status 3"
        assert any(
            "owner turn 1 failed (crashed): runner exited with status 3. Retrying once." in t
            for t in kit.platform.texts()
        )
        assert (await kit.task()).status == "closed"
        assert (await kit.store.task_extras(1))["failures"] == 0


async def test_a_turn_whose_engine_was_lost_is_interrupted_and_runs_again(tmp_path: Path) -> None:
    # Not the agent's failure: no "retrying once", no failure counted, and three lost engines in
    # a row (each drained by the backend, container/engine_set.py) still end with the task done.
    lost = "the container engine unix:///a.sock stopped answering (Connection refused)"
    script: Script = {
        "owner": [fail("engine_lost", lost), "DONE\nsecond try", "DONE"],
        "reviewer": [fail("engine_lost", lost), fail("engine_lost", lost), "APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        turns = await kit.store.turns(1)
        assert [(t.role, t.status) for t in turns] == [
            ("owner", "interrupted"),
            ("owner", "done"),
            ("reviewer", "interrupted"),
            ("reviewer", "interrupted"),
            ("reviewer", "done"),
            ("owner", "done"),
        ]
        assert turns[0].error == f"interrupted: its container engine stopped answering: {lost}"
        texts = kit.platform.texts()
        assert sum("its container engine stopped answering" in t for t in texts) == 3
        assert not any("Retrying once" in t for t in texts)
        assert (await kit.task()).status == "closed"
        assert (await kit.store.task_extras(1))["failures"] == 0


async def test_engines_lost_three_times_in_a_row_fail_the_turn(tmp_path: Path) -> None:
    # Engines that keep failing (or one flapping between drained and back) must not run a turn
    # again without end: the third loss in a row is decided as the failure it is.
    lost = "the container engine unix:///a.sock stopped answering (Connection refused)"
    script: Script = {
        "owner": [fail("engine_lost", lost)] * 3 + ["DONE\nat last", "DONE"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        turns = await kit.store.turns(1)
        assert [(t.role, t.status) for t in turns][:4] == [
            ("owner", "interrupted"),
            ("owner", "interrupted"),
            ("owner", "failed"),
            ("owner", "done"),
        ]
        assert turns[2].error == lost
        assert any(
            f"owner turn 3 failed (engine_lost): {lost}. Retrying once." in t
            for t in kit.platform.texts()
        )
        assert (await kit.task()).status == "closed"


async def test_a_hang_reported_by_the_backend_twice_escalates(tmp_path: Path) -> None:
    idle = "no event for 300 s"
    script: Script = {
        "owner": ["DONE\nv1"],
        "reviewer": [fail("idle_timeout", idle, delay=0.01), fail("idle_timeout", idle)],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        task = await kit.task()
        assert task.status == "waiting_human"
        turns = await kit.store.turns(1)
        assert [(t.role, t.status) for t in turns] == [
            ("owner", "done"),
            ("reviewer", "failed"),
            ("reviewer", "failed"),
        ]
        esc = await kit.store.open_escalation(1)
        assert esc is not None and esc.kind == "failure"
        assert "reviewer turn 3 failed (idle_timeout): no event for 300 s" in esc.reason
        # Usage of failed turns still counts.
        assert task.tokens == 3 * 120


async def test_a_runner_that_never_ends_hits_the_engines_safety_net(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turns_module, "SAFETY_MARGIN_S", 0.0)
    policy = GroupPolicy(name="g", approvers=frozenset({"boss"}), hard_timeout_s=0.2)
    async with engine_kit(tmp_path, {"owner": [hang(), hang()]}, policy=policy) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        turns = await kit.store.turns(1)
        assert [t.status for t in turns] == ["failed", "failed"]
        assert all(c.cancelled for c in kit.runner.calls)
        assert (await kit.task()).status == "waiting_human"
        assert "did not finish within 0 s" in (turns[0].error or "")


class QueuedRunner(ScriptedRunner):
    """A backend that queues each turn (as the Docker backend does behind a busy container)
    before the runner starts and sends its first event."""

    def __init__(self, *args: Any, queued_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queued_s = queued_s

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        await asyncio.sleep(self.queued_s)
        async for event in super().run(spec):
            yield event


@pytest.mark.parametrize(
    ("queued_s", "statuses", "error"),
    [
        # Longer than the turn's limit, but the turn itself is quick: it is not killed.
        (0.5, ["done", "done", "done"], None),
        # A backend that never starts the turn is still caught, by the start allowance.
        (30.0, ["failed", "failed"], "did not start within"),
    ],
)
async def test_time_queued_before_the_runner_starts_is_not_the_turns(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    queued_s: float,
    statuses: list[str],
    error: str | None,
) -> None:
    monkeypatch.setattr(turns_module, "SAFETY_MARGIN_S", 0.0)
    policy = GroupPolicy(name="g", approvers=frozenset({"boss"}), hard_timeout_s=0.2)
    script: Script = {"owner": ["DONE", "DONE"], "reviewer": ["APPROVED"]}
    runner = QueuedRunner(script, queued_s=queued_s)
    async with engine_kit(tmp_path, policy=policy, runner=runner) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        turns = await kit.store.turns(1)
        assert [t.status for t in turns] == statuses
        if error:
            assert error in (turns[0].error or "")


class RaisingRunner(ScriptedRunner):
    """A backend that breaks its contract once: it raises instead of yielding an error event."""

    raised = False

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        if not self.raised:
            self.raised = True
            yield RunEvent(kind="progress", text="starting")
            raise ConnectionResetError("engine socket closed")
        async for event in super().run(spec):
            yield event


async def test_a_runner_that_raises_fails_only_its_turn(tmp_path: Path) -> None:
    runner = RaisingRunner({"owner": ["DONE", "DONE"], "reviewer": ["APPROVED"]})
    async with engine_kit(tmp_path, runner=runner) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        [first, *_] = await kit.store.turns(1)
        assert first.status == "failed"
        assert first.error == "the runner raised ConnectionResetError: engine socket closed"
        assert (await kit.task()).status == "closed"


async def test_a_missing_prompt_override_fails_the_turn_with_a_clear_reason(
    tmp_path: Path,
) -> None:
    missing = str(tmp_path / "nope.md")
    policy = GroupPolicy(
        name="g", approvers=frozenset({"boss"}), prompt_overrides={"owner": missing}
    )
    async with engine_kit(tmp_path, {}, policy=policy) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        turns = await kit.store.turns(1)
        assert [t.status for t in turns] == ["failed", "failed"]
        assert "the turn could not be started" in (turns[0].error or "")
        assert "nope.md" in (turns[0].error or "")
        assert kit.runner.calls == []
        assert (await kit.task()).status == "waiting_human"


async def test_engine_stop_interrupts_the_turn_and_the_next_start_runs_it_again(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "shared.db")
    async with engine_kit(tmp_path, {"owner": [hang(progress=("thinking",))]}, db=db) as kit:
        await kit.say("@tribunal build")
        call = await kit.runner.wait_calls(1)
        await kit.platform.wait_for(lambda: bool(kit.platform.progress()))
        await kit.engine.stop()
        assert call.cancelled
        [turn] = await kit.store.turns(1)
        assert turn.status == "interrupted" and "the engine stopped" in (turn.error or "")
        assert (await kit.task()).status == "owner_turn"
        assert (await kit.store.task_extras(1))["lease_owner"] is None

    script: Script = {"owner": ["DONE\nagain", "DONE"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, script, db=db) as kit:
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "owner"]
        turns = await kit.store.turns(1)
        assert [t.status for t in turns] == ["interrupted", "done", "done", "done"]
        assert (await kit.task()).status == "closed"


async def test_a_running_turn_left_by_a_dead_engine_is_taken_over_after_its_lease(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "shared.db")
    # What a process killed in the middle of a turn leaves behind: its lease and a running turn.
    store = await Store.open(db)
    task = await store.open_task(ROOM, "g", "build", "alice", time.time())
    assert task is not None
    assert await store.claim(task.id, "dead-engine", time.time(), 0.5)
    assert await store.begin_turn(task, "owner", "dead-engine", time.time()) is not None
    await store.close()

    script: Script = {"owner": ["DONE", "DONE"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, script, db=db, lease_s=0.5) as kit:
        await kit.settle()
        turns = await kit.store.turns(1)
        assert [t.status for t in turns] == ["interrupted", "done", "done", "done"]
        assert "runs again" in (turns[0].error or "")
        assert (await kit.task()).status == "closed"
        assert any("turn 1 was interrupted; running it again" in t for t in kit.platform.texts())
        assert kit.roles() == ["owner", "reviewer", "owner"]


async def test_an_unreliable_platform_gets_every_message_once_in_order(tmp_path: Path) -> None:
    script: Script = {"owner": ["DONE\none", "DONE\nthree"], "reviewer": ["APPROVED\ntwo"]}
    async with engine_kit(tmp_path, script) as kit:
        kit.platform.fail_next = 3
        await kit.say("@tribunal build")
        await kit.settle()
        texts = kit.platform.texts()
        assert texts[1:4] == ["DONE\none", "APPROVED\ntwo", "DONE\nthree"]
        ids = [p.message.outbox_id for p in kit.platform.messages()]
        assert ids == sorted(ids)
        assert len(kit.platform.redeliveries()) == 3  # the first message, handed 3 more times
        rows = await kit.store.outbox()
        assert all(r.status == "sent" for r in rows)
        assert rows[0].attempts == 4 and rows[0].last_error is None


async def test_a_message_the_platform_always_refuses_is_set_aside_not_lost(
    tmp_path: Path,
) -> None:
    async with engine_kit(tmp_path, {"owner": [hang()]}) as kit:
        kit.engine.outbox.max_attempts = 3
        kit.platform.fail_when = lambda m: m.text.startswith("📋")
        await kit.say("@tribunal build")
        await kit.say("@tribunal status")
        await kit.engine.outbox.flush()
        [dead] = await kit.store.outbox(status="dead")
        assert dead.text.startswith("📋") and dead.attempts == 3
        assert "refused this message" in (dead.last_error or "")
        assert kit.platform.texts()[0].startswith("Task #1")  # the room went on after it


@pytest.mark.parametrize(
    "usage",
    [
        {"cost_usd": float("nan")},
        {"cost_usd": float("inf")},
        {"cost_usd": -5.0},
        {"input_tokens": -1000},
        {"output_tokens": 2**70},
    ],
    ids=["nan-cost", "inf-cost", "negative-cost", "negative-tokens", "huge-tokens"],
)
async def test_usage_that_is_not_finite_and_non_negative_is_ignored(
    tmp_path: Path, usage: dict[str, Any]
) -> None:
    """A runner's bad usage numbers must not kill the driver or poison the task's sums."""
    script: Script = {
        "owner": [Reply(text="DONE\nv1", **usage), "DONE\nwrapped"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal build")
        await kit.settle()
        task = await kit.task()
        assert task.status == "closed"
        # The bad event counted nothing; the other two turns' usage did.
        assert (task.tokens, round(task.cost_usd, 6)) == (2 * 120, 0.02)


async def test_a_driver_that_dies_is_restarted_with_backoff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rooms import engine as engine_module

    real_drive = engine_module.drive
    deaths = 0

    async def dies_twice(ctx: Any, task_id: int) -> None:
        nonlocal deaths
        if deaths < 2:
            deaths += 1
            raise RuntimeError("database is locked")
        await real_drive(ctx, task_id)

    monkeypatch.setattr(engine_module, "drive", dies_twice)
    script: Script = {"owner": ["DONE", "DONE"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, script) as kit:
        kit.engine.restart_first_s = 0.01
        await kit.say("@tribunal build")
        async with asyncio.timeout(15):
            while (await kit.task()).status != "closed":
                await kit.settle()
                await asyncio.sleep(0.01)
        assert deaths == 2
        assert kit.engine._failures == {}  # a clean end resets the backoff


async def test_restart_backoff_doubles_up_to_its_maximum(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, start=False) as kit:
        engine = kit.engine
        engine.restart_first_s, engine.restart_max_s = 1.0, 5.0
        loop = asyncio.get_running_loop()
        waits = []
        for _ in range(5):
            before = loop.time()
            engine._restart_later(7)
            waits.append(round(engine._restarts[7].when() - before))
        assert waits == [1, 2, 4, 5, 5]
        await engine.stop()
        assert engine._restarts == {}


async def test_the_periodic_scan_drives_an_open_task_that_no_engine_holds(
    tmp_path: Path,
) -> None:
    script: Script = {"owner": ["DONE", "DONE"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, script, start=False) as kit:
        assert kit.engine.scan_s == 30.0
        kit.engine.scan_s = 0.05
        await kit.engine.start()
        # Tasks another process opened and then died with: no driver here; one of them has a
        # live lease of another engine, which keeps it.
        held = await kit.store.open_task(RoomRef("test", "C1", "T9"), "g", "x", "bob", 1.0)
        assert held is not None
        assert await kit.store.claim(held.id, "other-engine", time.time(), 60.0)
        task = await kit.store.open_task(ROOM, "g", "build", "alice", time.time())
        assert task is not None
        async with asyncio.timeout(15):
            while (await kit.task(task.id)).status != "closed":
                await asyncio.sleep(0.02)
        assert {c.spec.env["TRIBUNAL_TASK"] for c in kit.runner.calls} == {str(task.id)}
        assert await kit.engine.scan() == []


async def test_a_turn_longer_than_its_lease_keeps_it_and_one_taken_over_stops(
    tmp_path: Path,
) -> None:
    """The lease keeper (rooms/core/turns.py, started at the first heartbeat): a turn that runs
    past several leases still holds its task; once another engine takes the lease over, the
    running turn is stopped and kept as interrupted, and this engine drives the task no more."""
    db = str(tmp_path / "shared.db")
    gate = asyncio.Event()
    script: Script = {"owner": [Reply(text="DONE", gate=gate)]}
    async with engine_kit(tmp_path, script, db=db, lease_s=0.3) as kit:
        await kit.say("@tribunal build it")
        async with asyncio.timeout(15):
            await kit.runner.wait_calls(1)
        await asyncio.sleep(1.0)  # more than three leases
        other = await Store.open(db)
        try:
            assert not await other.claim(1, "other-engine", time.time(), 60.0)  # still held
            # The lease as a dead engine's would be: expired, so another engine takes it.
            await other._write("UPDATE tasks SET lease_until=? WHERE id=1", (time.time() - 1,))
            assert await other.claim(1, "other-engine", time.time(), 60.0)
        finally:
            await other.close()
        async with asyncio.timeout(15):
            while (await kit.store.turns(1))[0].status == "running":
                await asyncio.sleep(0.05)
        [turn] = await kit.store.turns(1)
        assert turn.status == "interrupted" and "taken over" in (turn.error or "")
        extras = await kit.store.task_extras(1)
        assert extras is not None and extras["lease_owner"] == "other-engine"
