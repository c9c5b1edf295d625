"""The store parts written beside the PostgreSQL store (the outcome ledger, the dashboard's reads
and sign-in links) run on both databases: one real engine flow per database, every query of
theirs called on its rows, and the same answers from SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooms.core.ledger import ledger_summary
from rooms.judge.outcomes import NOT_BORNE_OUT, PENDING, UPHELD
from rooms.store.dashboard_auth import LinkIdentity
from rooms.store.dashboard_reads import TaskFilter
from tests.fakes.engine_kit import FakeClock, engine_kit
from tests.rooms.store_helpers import DATABASES, database
from tests.rooms.test_outcome_ledger import FINDING, POLICY, TASK, rule, script


@pytest.mark.parametrize("kind", DATABASES)
async def test_the_ledger_and_the_dashboards_reads_on_each_database(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    clock = FakeClock()
    db = database(kind, request, tmp_path)
    s = script(
        [rule("REVISE"), rule("ESCALATE")],
        owner=[
            "DONE\nchanged nothing",
            "DONE\nstill the same",
            "DONE\nrewrote it",
            "DONE\nwrapped",
        ],
        reviewer=[FINDING, FINDING, "APPROVED"],
    )
    async with engine_kit(tmp_path, s, policy=POLICY, clock=clock, db=db) as kit:
        await kit.say(TASK)
        await kit.settle()
        store = kit.store
        task = await kit.task()
        assert task.status == "waiting_human"
        assert [o.result for o in await store.outcomes()] == [NOT_BORNE_OUT, PENDING]

        lines, total = await store.task_lines(TaskFilter(status="waiting_human"))
        assert total == 1 and [line.id for line in lines] == [task.id]
        assert (await store.task_line(task.id)) is not None
        assert "waiting_human" in (await store.facets())["status"]
        mark = await store.change_mark()
        questions = await store.open_questions(frozenset({"g"}))
        assert [q.task_id for q in questions] == [task.id]
        assert questions[0].options == ("keep the parser", "rewrite it with csv")
        assert await store.open_questions(frozenset({"another group"})) == []
        judgment = await store.judgment(0.0)
        assert sum(sum(c.values()) for c in judgment.rulings_by_day.values()) == 2
        assert await store.spend(0.0) == await store.spend(0.0, frozenset({"g"}))
        await store.usage_by_role(task.id)
        assert (await store.store_counts()) is not None

        who = LinkIdentity("test", "boss", frozenset({"lead"}))
        await store.add_dashboard_link("h" * 64, who, clock.now(), clock.now() + 60)
        assert await store.spend_dashboard_link("h" * 64, clock.now()) == who
        assert await store.spend_dashboard_link("h" * 64, clock.now()) is None  # once only
        await store.record_dashboard_action(
            at=clock.now(), who="boss", action="stop", task_id=task.id, detail="", outcome="done"
        )
        assert [a.action for a in await store.dashboard_actions(task.id)] == ["stop"]

        esc_id = await kit.escalation_id()
        clock.advance(60)
        await kit.click("choose", f"{esc_id}.2")
        await kit.settle()
        _, escalate = await store.outcomes()
        assert (escalate.result, escalate.people_s) == (UPHELD, 60.0)
        assert await store.change_mark() != mark
        ledger = await ledger_summary(store)
        assert (ledger.overall.rulings, ledger.overall.upheld) == (2, 1)
