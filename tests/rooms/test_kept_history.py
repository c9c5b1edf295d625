"""The driver keeps each task's history between steps instead of reading it again
(rooms/core/kept_history.py). Whatever happened meanwhile — people writing while a turn runs,
the engine restarting, another engine changing the task — the history a turn is built from is
the store's, exactly: a spy on the pair's `spec` compares the two at every turn, reading the
store through a connection of its own.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rooms.base.model import Turn
from rooms.base.records import Change
from rooms.base.words import SUMMONED
from rooms.core.protocol import Step
from rooms.judge.history import History
from rooms.pair.protocol import PairProtocol
from rooms.store import Store
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Reply, Script, say
from tests.rooms.test_engine_wording import ruling


class Spy:
    """Compares the history of every turn's `Step` with the store's as the turn begins."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, db: str) -> None:
        self.db = db
        self.compared: list[tuple[str, int]] = []  # (role, turn seq)
        self.differ: list[str] = []
        real = PairProtocol.spec

        async def spec(protocol: PairProtocol, step: Step, turn: Turn) -> object:
            await self.compare(step, turn)
            return await real(protocol, step, turn)

        monkeypatch.setattr(PairProtocol, "spec", spec)

    async def compare(self, step: Step, turn: Turn) -> None:
        observer = await Store.open(self.db)
        try:
            stored = await observer.history(step.task.id)
        finally:
            await observer.close()
        # The store has the turn that just began; the step's history is the one before it,
        # with every message written before the turn began (a later one is for the next turn).
        expected = History(
            [t for t in stored.turns if t.id != turn.id],
            [m for m in stored.messages if m.before_seq <= turn.seq],
            stored.verdicts,
            stored.firings,
            stored.waited_s,
        )
        self.compared.append((turn.role, turn.seq))
        if step.history != expected:
            kept, stored = step.history, expected
            parts = [
                f"{name}: {getattr(kept, name)} != {getattr(stored, name)}"
                for name in ("turns", "messages", "verdicts", "firings", "waited_s")
                if getattr(kept, name) != getattr(stored, name)
            ]
            self.differ.append(f"turn {turn.seq} ({turn.role}): " + "; ".join(parts))


async def started(kit: object, calls: int) -> None:
    runner = kit.runner  # type: ignore[attr-defined]
    async with asyncio.timeout(15):
        await runner.wait_calls(calls)


async def test_history_equals_the_stores_with_messages_and_after_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "tribunal.db")
    spy = Spy(monkeypatch, db)
    gate = asyncio.Event()
    first: Script = {
        "owner": ["DONE\nv1", "DONE\nv2"],
        "reviewer": ["CHANGES_REQUESTED\n- one", Reply(text="CHANGES_REQUESTED\n- two", gate=gate)],
    }
    async with engine_kit(tmp_path, first, db=db) as kit:
        await kit.say("@tribunal build it")
        await started(kit, 2)  # the first review runs...
        await kit.say("a note while the reviewer reads", user="carol", mention=False)
        await started(kit, 4)  # ...the second review is held: the engine stops under it
        await kit.say("a note before the restart", user="dave", mention=False)
    then: Script = {
        "owner": ["DONE\nv3", "DONE\nwrapped"],
        "reviewer": ["CHANGES_REQUESTED\n- three", "APPROVED"],
    }
    async with engine_kit(tmp_path, then, db=db) as kit:  # another process, same database
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert len(await kit.store.messages(1)) == 2
    assert spy.differ == []
    assert len(spy.compared) == 8  # 4 turns before the restart, 4 after (the cut one again)


async def test_history_equals_the_stores_after_another_engine_changed_the_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the owner works, another engine (its own connection) moves the task on (a
    person's `arbitrate`, as another process handles it) and a person writes: the owner's result
    is kept as interrupted, and the arbiter's turn is built from the store's history again."""
    db = str(tmp_path / "tribunal.db")
    spy = Spy(monkeypatch, db)
    gate = asyncio.Event()
    proceed = ruling("PROCEED")
    script: Script = {
        "owner": ["DONE\nv1", Reply(text="DONE\nv2", gate=gate), "DONE\nwrapped"],
        "reviewer": ["CHANGES_REQUESTED\n- one", "APPROVED"],
        "arbiter": [say("", structured=proceed)],
    }
    async with engine_kit(tmp_path, script, db=db) as kit:
        await kit.say("@tribunal build it")
        await started(kit, 3)  # the owner's second turn is running, held
        other = await Store.open(db)
        try:
            task = await other.task(1)
            assert task is not None
            moved = await other.apply(
                Change(1, kit.engine.ctx.now(), expect_version=task.version, event=SUMMONED)
            )
            assert moved is not None and moved.status == "arbitration"
        finally:
            await other.close()
        await kit.say("please keep it small", user="carol", mention=False)
        gate.set()
        await kit.settle()
        turns = await kit.store.turns(1)
        assert [t.status for t in turns][:3] == ["done", "done", "interrupted"]
        assert "arbiter" in [t.role for t in turns]
    assert spy.differ == []
    assert ("arbiter", 4) in spy.compared


async def test_a_message_written_while_the_turn_runs_reaches_its_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store writes a turn's end only when the decision saw every message people wrote
    while the turn ran (rooms/store/steps.py `apply_step`): one written meanwhile is in the
    history of the decision that is applied, and of the next turn."""
    db = str(tmp_path / "tribunal.db")
    spy = Spy(monkeypatch, db)
    decided: list[tuple[int, list[str]]] = []  # (turn seq, the messages its decision saw)
    real = PairProtocol.decide

    async def decide(protocol: PairProtocol, step: Step, turn: Turn, run: object) -> Change:
        decided.append((turn.seq, [m.text for m in step.history.messages]))
        return await real(protocol, step, turn, run)  # type: ignore[arg-type]

    monkeypatch.setattr(PairProtocol, "decide", decide)
    gate = asyncio.Event()
    script: Script = {
        "owner": ["DONE\nv1", "DONE\nv2", "DONE\nwrapped"],
        "reviewer": [Reply(text="CHANGES_REQUESTED\n- one", gate=gate), "APPROVED"],
    }
    async with engine_kit(tmp_path, script, db=db) as kit:
        await kit.say("@tribunal build it")
        await started(kit, 2)  # the review runs, held
        await kit.say("a note while the reviewer reads", user="carol", mention=False)
        gate.set()
        await kit.settle()
        assert (await kit.task()).status == "closed"
    review = [seen for seq, seen in decided if seq == 2]
    assert review[-1] == ["a note while the reviewer reads"]  # the decision that was applied
    assert all(seen == ["a note while the reviewer reads"] for seq, seen in decided if seq > 2)
    assert spy.differ == []
