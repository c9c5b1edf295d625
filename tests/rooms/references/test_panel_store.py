"""Panels in the store (rooms/store/panels.py) and one panel per arbitration
(rooms/references/arbitration.py): stored at once, read again on a send-back or a re-run, a new
one after the pair has worked again."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from rooms.base.model import Ruling
from rooms.base.records import Change, TurnEnd, VerdictDraft
from rooms.references.arbitration import PanelUse, panel_for, room_lines, verdict_fields
from rooms.store import Store
from rooms.store.schema import LATEST, MIGRATIONS
from tests.fakes.references import FakeReference, panel_of
from tests.rooms.store_helpers import NOW, new_task, store  # noqa: F401 (fixture)

ENGINE = "engine-test"


async def _turn(db: Store, task_id: int, role: str, *, finish: bool = True) -> int:
    task = await db.task(task_id)
    assert task is not None
    turn = await db.begin_turn(task, role, ENGINE, NOW)
    assert turn is not None
    if finish:
        end = TurnEnd(turn.id, "done", NOW, output="DONE")
        assert await db.apply(Change(task_id, NOW, expect_lease=ENGINE, turn=end))
    return turn.id


async def test_one_panel_per_arbitration(store: Store) -> None:  # noqa: F811
    task = await new_task(store)
    assert await store.claim(task.id, ENGINE, NOW, 30)
    refs = panel_of(
        FakeReference("a", "model-a", answer="VERDICT: REVISE\nadd the test", tokens=(100, 10)),
        FakeReference("b", "model-b", fail="HTTP 500: down"),
    )
    arbiter = await _turn(store, task.id, "arbiter", finish=False)

    async def ask() -> PanelUse:
        return await panel_for(
            store,
            refs,
            task_id=task.id,
            turn_id=arbiter,
            history=await store.history(task.id),
            context=lambda seed: "the context",
            deadline_s=5,
            now=NOW,
        )

    use = await ask()
    assert use.panel is not None and use.panel_id is not None
    assert len(refs[0].prompts) == 1 and refs[0].prompts[0].endswith("the context\n")
    assert "You give a reference opinion" in refs[0].prompts[0]
    stored = await store.panel(use.panel_id)
    assert stored == use.panel
    assert [(o.name, o.label, o.error) for o in stored.opinions if o.name == "b"] == [
        ("b", "", "HTTP 500: down")
    ]
    task_now = await store.task(task.id)
    assert task_now is not None and task_now.tokens == 110 and task_now.cost_usd > 0

    again = await ask()  # a send-back or a re-run of the same arbitration: not asked again
    assert again == use and len(refs[0].prompts) == 1

    # The ruling uses the panel: the next arbitration asks again.
    ruling = Ruling(verdict="REVISE", conditions=["add the test"])
    fields = verdict_fields(use)
    assert fields["tally"]["unanimous"] is None and fields["tally"]["majority"] == "REVISE"
    end = TurnEnd(arbiter, "done", NOW, output="REVISE")
    change = Change(
        task.id,
        NOW,
        expect_lease=ENGINE,
        turn=end,
        verdict=VerdictDraft(arbiter, ruling, None, None, **fields),
    )
    assert await store.apply(change)
    [verdict] = await store.verdicts(task.id)
    assert verdict.panel_id == use.panel_id and verdict.tally == fields["tally"]
    assert await store.pending_panel(task.id) is None
    arbiter2 = await _turn(store, task.id, "arbiter", finish=False)
    arbiter = arbiter2
    third = await ask()
    assert third.panel_id != use.panel_id and len(refs[0].prompts) == 2
    assert (await store.latest_panel(task.id)) == third.panel
    assert room_lines(ruling, third)[0].startswith("References (REVISE 1; seed ")


async def test_a_panel_left_by_an_earlier_arbitration_is_not_reused(store: Store) -> None:  # noqa: F811
    task = await new_task(store)
    assert await store.claim(task.id, ENGINE, NOW, 30)
    refs = panel_of(FakeReference("a", "m"))
    first = await _turn(store, task.id, "arbiter")  # its run failed: no verdict
    kwargs: dict[str, Any] = {"context": lambda seed: "c", "deadline_s": 5, "now": NOW}
    use = await panel_for(
        store,
        refs,
        task_id=task.id,
        turn_id=first,
        history=await store.history(task.id),
        **kwargs,
    )
    await _turn(store, task.id, "owner")  # the pair worked again
    later = await _turn(store, task.id, "arbiter", finish=False)
    fresh = await panel_for(
        store,
        refs,
        task_id=task.id,
        turn_id=later,
        history=await store.history(task.id),
        **kwargs,
    )
    assert fresh.panel_id != use.panel_id and len(refs[0].prompts) == 2


async def test_without_references_the_seed_is_still_stored(store: Store) -> None:  # noqa: F811
    task = await new_task(store)
    assert await store.claim(task.id, ENGINE, NOW, 30)
    turn = await _turn(store, task.id, "arbiter", finish=False)
    use = await panel_for(
        store,
        [],
        task_id=task.id,
        turn_id=turn,
        history=await store.history(task.id),
        context=lambda seed: "c",
        deadline_s=5,
        now=NOW,
    )
    assert use.panel is not None and use.panel.opinions == () and use.section == ""
    assert (await store.panel(use.panel_id or 0)) == use.panel
    assert verdict_fields(use)["tally"]["counts"] == {}


async def test_a_database_of_schema_3_is_upgraded(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    raw = sqlite3.connect(path)
    for step in MIGRATIONS[:3]:
        for sql in step:
            raw.execute(sql)
    raw.execute("PRAGMA user_version=3")
    raw.commit()
    raw.close()
    upgraded = await Store.open(path)
    try:
        assert await upgraded.schema_version() == LATEST
        task = await new_task(upgraded)
        assert await upgraded.latest_panel(task.id) is None
    finally:
        await upgraded.close()
