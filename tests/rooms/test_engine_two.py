"""Two engines (two stores) on one database, a SQLite file or PostgreSQL, started on the same
open tasks: the leases make every turn run exactly once and every message post once."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from rooms.base.model import GroupPolicy, Inbound, RoomRef
from rooms.base.records import OutboxDraft
from rooms.engine import Engine
from rooms.store import Store
from runners.protocol import RunSpec
from tests.fakes.engine_kit import StaticPolicies
from tests.fakes.platform import RecordingPlatform
from tests.fakes.runner import Reply, ScriptedRunner
from tests.rooms.store_helpers import DATABASES, database

TASKS = 6


def scripted(spec: RunSpec) -> Reply:
    """The same story for every task, read from the prompt (so a re-run turn says the same):
    one round of changes, then approval and the wrap-up."""
    prompt = spec.request.prompt
    if spec.request.role == "reviewer":
        text = (
            "APPROVED" if "handled it" in prompt else "CHANGES_REQUESTED\n- handle the empty input"
        )
    elif "Your turn: wrap up" in prompt:
        text = "DONE\nwrapped up"
    elif "handle the empty input" in prompt:
        text = "DONE\nhandled it"
    else:
        text = "DONE\nfirst version"
    return Reply(text=text, delay=0.02)  # long enough for the engines' work to overlap


async def _open_tasks(path: str) -> None:
    setup = await Store.open(path)
    for n in range(TASKS):
        room = RoomRef("test", "C1", f"T{n}")
        draft = OutboxDraft(f"ack:{room.thread}", room, "opened")
        await setup.open_task(room, "g", f"task {n}", "alice", time.time(), outbox=[draft])
    await setup.close()


@dataclass
class Pair:
    """Two engines, each with its own store connection, runner and platform, on one file."""

    stores: list[Store]
    runners: list[ScriptedRunner]
    platforms: list[RecordingPlatform]
    engines: list[Engine]


# Longer than a test may take (their timeouts are 60 s), for a test where no engine stops: a
# lease that ran out could only mean a heartbeat late under load, and the other engine taking
# over a turn still running (run twice) or a row in delivery (posted twice). With it, who runs
# what is decided by the claims alone.
LONG_LEASE_S = 120.0
# For a test where an engine stops: the other takes over its outbox rows once their claims end
# (stopping releases the tasks' leases, not a row claimed mid-delivery).
SHORT_LEASE_S = 0.6


@asynccontextmanager
async def two_engines(path: str, lease_s: float) -> AsyncIterator[Pair]:
    policies = StaticPolicies(GroupPolicy(name="g", approvers=frozenset({"boss"})))
    stores = [await Store.open(path), await Store.open(path)]
    runners = [ScriptedRunner(decide=scripted), ScriptedRunner(decide=scripted)]
    platforms = [RecordingPlatform(), RecordingPlatform()]
    engines = [
        Engine(stores[i], runners[i], platforms[i], policies, engine_id=f"E{i}", lease_s=lease_s)
        for i in range(2)
    ]
    try:
        yield Pair(stores, runners, platforms, engines)
    finally:
        for e in engines:
            await e.stop()
        for s in stores:
            await s.close()


@pytest.mark.parametrize("kind", DATABASES)
async def test_two_engines_run_every_turn_exactly_once(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    path = database(kind, request, tmp_path)
    await _open_tasks(path)

    async with two_engines(path, LONG_LEASE_S) as pair:
        await asyncio.gather(*(e.start() for e in pair.engines))
        async with asyncio.timeout(60):
            await asyncio.gather(*(e.idle() for e in pair.engines))

        calls = [c for r in pair.runners for c in r.calls]
        per_turn = Counter(c.task_turn for c in calls)
        assert len(per_turn) == TASKS * 5
        assert set(per_turn.values()) == {1}, per_turn.most_common(3)
        for task in [await pair.stores[0].task(n) for n in range(1, TASKS + 1)]:
            assert task is not None and task.status == "closed"
            turns = await pair.stores[0].turns(task.id)
            assert [t.status for t in turns] == ["done"] * 5
            assert [t.role for t in turns] == ["owner", "reviewer", "owner", "reviewer", "owner"]

        posted = Counter(p.message.outbox_id for pl in pair.platforms for p in pl.messages())
        rows = await pair.stores[0].outbox()
        assert set(posted) == {r.id for r in rows}
        assert set(posted.values()) == {1}  # no message went out through both pair.engines
        assert all(r.status == "sent" for r in rows)


@pytest.mark.parametrize("kind", DATABASES)
async def test_an_engine_that_stops_hands_its_tasks_to_the_other(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    path = database(kind, request, tmp_path)
    await _open_tasks(path)
    async with two_engines(path, SHORT_LEASE_S) as pair:
        await pair.engines[0].start()
        await pair.runners[0].wait_calls(TASKS + 2)  # E0 holds every task and is mid-way
        await pair.engines[1].start()  # E1 waits on E0's leases
        await pair.engines[0].stop()  # running turns are interrupted, leases released
        async with asyncio.timeout(60):
            # E1 may have no driver running at this moment: on PostgreSQL its drivers stopped
            # at E0's leases and the release wakes it (LISTEN/NOTIFY); on SQLite they poll.
            while await pair.stores[1].open_tasks():
                await asyncio.sleep(0.05)
            await pair.engines[1].idle()

        calls = [c for r in pair.runners for c in r.calls]
        per_turn = Counter(c.task_turn for c in calls)
        assert set(per_turn.values()) == {1}, per_turn.most_common(3)
        assert pair.runners[1].calls, "E1 took the tasks over"
        for n in range(1, TASKS + 1):
            task = await pair.stores[1].task(n)
            assert task is not None and task.status == "closed"
            turns = await pair.stores[1].turns(n)
            ran = {int(seq) for task_id, seq in per_turn if task_id == str(n)}
            assert ran <= {t.seq for t in turns}
            # A turn may be begun and interrupted before its run even started: never run twice.
            assert all(t.status == "interrupted" for t in turns if t.seq not in ran)
            done = [t.role for t in turns if t.status == "done"]
            assert done == ["owner", "reviewer", "owner", "reviewer", "owner"]
            assert {t.status for t in turns} <= {"done", "interrupted"}
        everything = [t for n in range(1, TASKS + 1) for t in await pair.stores[1].turns(n)]
        assert any(t.status == "interrupted" for t in everything)


@pytest.mark.parametrize("kind", DATABASES)
async def test_one_event_handed_to_both_engines_opens_one_task(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    path = database(kind, request, tmp_path)
    policies = StaticPolicies(GroupPolicy(name="g", approvers=frozenset({"boss"})))
    stores = [await Store.open(path), await Store.open(path)]
    runner = ScriptedRunner({"owner": [Reply(hang=True)]})
    engines = [
        Engine(s, runner, RecordingPlatform(), policies, engine_id=f"E{i}", lease_s=0.6)
        for i, s in enumerate(stores)
    ]
    room = RoomRef("test", "C1", "T1")
    inbound = Inbound(room, "alice", "@tribunal build it", event_id="Ev1", mentions_bot=True)
    try:
        await asyncio.gather(*(e.handle(inbound) for e in engines))
        await runner.wait_calls(1)
        await asyncio.sleep(0.3)  # give a wrong second driver the time to start a turn
        assert len(runner.calls) == 1
        assert len(await stores[0].open_tasks()) == 1
        assert len(await stores[1].outbox()) == 1  # one acknowledgement
    finally:
        for e in engines:
            await e.stop()
        for s in stores:
            await s.close()


class AnyPlatformPolicies:
    """Every room is the one group's, whatever its platform."""

    def for_room(self, room: RoomRef) -> GroupPolicy | None:
        return GroupPolicy(name="g", approvers=frozenset({"boss"}))


@pytest.mark.parametrize("kind", DATABASES)
async def test_engines_of_two_platforms_each_drive_and_deliver_only_their_own(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A Slack process and a console process on one database: neither runs the other's turns,
    posts the other's messages, or even tries (no failed attempt is recorded on a row)."""
    path = database(kind, request, tmp_path)
    setup = await Store.open(path)
    for platform in ("slack", "console"):
        for n in range(3):
            room = RoomRef(platform, "C1", f"T{n}")
            draft = OutboxDraft(f"ack:{platform}:{n}", room, f"opened on {platform}")
            await setup.open_task(
                room, "g", f"{platform} task {n}", "alice", time.time(), outbox=[draft]
            )
    await setup.close()
    stores = [await Store.open(path), await Store.open(path)]
    runners = [ScriptedRunner(decide=scripted), ScriptedRunner(decide=scripted)]
    platforms = [RecordingPlatform(), RecordingPlatform()]
    served = ["slack", "console"]
    engines = [
        Engine(
            stores[i],
            runners[i],
            platforms[i],
            AnyPlatformPolicies(),
            engine_id=f"E{i}",
            lease_s=0.6,
            platforms=[served[i]],
        )
        for i in range(2)
    ]
    try:
        await asyncio.gather(*(e.start() for e in engines))
        async with asyncio.timeout(60):
            await asyncio.gather(*(e.idle() for e in engines))
        for i, platform in enumerate(served):
            prompts = [c.prompt for c in runners[i].calls]
            assert prompts and all(f"{platform} task" in p for p in prompts)
            assert all(p.message.room.platform == platform for p in platforms[i].posts)
            assert all(m.room.platform == platform for m in platforms[i].attempts)
        rows = await stores[0].outbox()
        assert rows and all(r.status == "sent" and r.last_error is None for r in rows)
        assert all(r.attempts == 1 for r in rows)  # nobody tried a row it does not serve
        for task_id in range(1, 7):
            task = await stores[0].task(task_id)
            assert task is not None and task.status == "closed"
        assert await stores[0].count_pending(platforms=frozenset({"slack"})) == 0
    finally:
        for e in engines:
            await e.stop()
        for s in stores:
            await s.close()
