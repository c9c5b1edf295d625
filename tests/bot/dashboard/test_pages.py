"""The pages over HTTP, on tasks the real engine ran: the tasks list (filters, waiting first),
a task's timeline, the open questions answered through the engine's own path (the thread's card
is edited), stop and arbitrate, costs and judgment."""

from __future__ import annotations

import re
from pathlib import Path

from tests.bot.dashboard.kit import BOSS, DashboardKit, dashboard_kit
from tests.bot.slack.test_http_e2e import ESCALATING
from tests.fakes.postgres import Server

QUESTION = "May the owner use the production key?"


async def _escalated(kit: DashboardKit) -> str:
    thread = await kit.slack.mention("add integration tests")
    await kit.slack.settle()
    return thread


async def _page(kit: DashboardKit, client: object, path: str) -> str:
    async with client.get(kit.url(path)) as response:  # type: ignore[attr-defined]
        assert response.status == 200, path
        return str(await response.text())


async def test_tasks_list_waiting_first_with_filters(tmp_path: Path) -> None:
    script = {**ESCALATING, "owner": [*ESCALATING["owner"]]}
    async with dashboard_kit(tmp_path, script) as kit:
        await _escalated(kit)
        operator = await kit.operator()
        page = await _page(kit, operator, "/")
        assert "add integration tests" in page and "waiting_human" in page
        assert re.search(r"<td>g</td>\s*<td><a [^>]*>slack ↗</a></td>\s*<td>pair</td>", page)
        # Filters narrow the list; a filter with no match shows none.
        assert "add integration tests" in await _page(kit, operator, "/?status=waiting_human")
        none = await _page(kit, operator, "/?status=closed")
        assert "add integration tests" not in none and "0 tasks" in none
        assert "0 tasks" in await _page(kit, operator, "/tasks/part?group=h")
        # The chat thread, where the platform names its address (Slack: auth.test's workspace).
        thread = next(iter(kit.slack.fake.roots))
        link = f'href="https://tribunal-tests.slack.com/archives/C1/p{thread.replace(".", "")}"'
        assert link in page
        assert link in await _page(kit, operator, "/tasks/1")
        # The part HTMX refreshes is the rows alone.
        part = await _page(kit, operator, "/tasks/part")
        assert "<html" not in part and "add integration tests" in part


async def test_a_tasks_timeline_costs_and_record(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit:
        await _escalated(kit)
        operator = await kit.operator()
        page = await _page(kit, operator, "/tasks/1")
        for shown in (
            "#1 owner · done · BLOCKED",  # the turn, its marker
            "I need the staging API key",  # its full output, folded
            "detector blocked",  # the firing with its reason
            "ruling ESCALATE",
            QUESTION,
            "fairness",
            "Cost by role and model",
            "claude:default",
            "Decision records",
        ):
            assert shown in page, shown
        assert 'id="stop"' in page and 'id="arbitrate"' in page
        assert "Approve" not in page  # the operator answers nothing


async def test_an_approver_answers_on_the_dashboard_and_the_threads_card_is_edited(
    tmp_path: Path,
) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit:
        thread = await _escalated(kit)
        [card] = [m for m in kit.slack.thread(thread) if m.buttons()]
        boss = await kit.person(BOSS)
        waiting = await _page(kit, boss, "/waiting")
        assert QUESTION in waiting and "1. yes" in waiting
        token = await kit.csrf(boss)
        async with boss.post(
            kit.url("/questions/1/answer"),
            headers={"X-CSRF-Token": token},
            data={"kind": "choose", "option": "1"},
        ) as response:
            assert response.status == 200, await response.text()
            assert "option 1: yes" in await response.text()
        await kit.slack.settle()
        # The same path as the card's button: the card in the thread says who chose what.
        assert card.buttons() == []
        assert f"Chosen by {BOSS}" in card.shown() and "option 1: yes" in card.shown()
        task = await kit.app.store.task(1)
        assert task is not None and task.status == "closed"  # the work went on to the end
        [action] = await kit.running.dashboard.store.dashboard_actions(1)
        assert (action.who, action.action, action.outcome) == (
            f"slack:{BOSS}",
            "answer",
            "answered",
        )
        assert "Nobody is waited for" in await _page(kit, boss, "/waiting")


async def test_a_written_answer_goes_to_the_owner(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit:
        await _escalated(kit)
        boss = await kit.person(BOSS)
        token = await kit.csrf(boss)
        async with boss.post(
            kit.url("/questions/1/answer"),
            headers={"X-CSRF-Token": token},
            data={"kind": "answer", "text": "use the mock, never production"},
        ) as response:
            assert response.status == 200, await response.text()
        await kit.slack.settle()
        owner_calls = [c for c in kit.slack.runner.calls if c.role == "owner"]
        assert "use the mock, never production" in owner_calls[1].prompt


async def test_stop_from_the_dashboard_stops_the_task(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit:
        thread = await _escalated(kit)
        boss = await kit.person(BOSS)
        token = await kit.csrf(boss)
        async with boss.post(kit.url("/tasks/1/stop"), headers={"X-CSRF-Token": token}) as response:
            assert response.status == 200
            assert "stopped" in await response.text()
        await kit.slack.settle()
        task = await kit.app.store.task(1)
        assert task is not None and task.status == "closed"
        assert any(f"stopped by {BOSS}" in m.text for m in kit.slack.thread(thread))


async def test_costs_and_judgment_show_what_the_store_has(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit:
        await _escalated(kit)
        operator = await kit.operator()
        costs = await _page(kit, operator, "/costs")
        for shown in ("By day", "By group", "By role", "By model", "claude:default", "Budgets"):
            assert shown in costs, shown
        assert "$0.0200" in costs  # owner + arbiter turns at $0.01 each
        assert 'href="/tasks/1"' not in costs  # far below its budget
        # A task past 80 % of its group's per-task budget ($50) is named.
        await kit.app.store._write("UPDATE tasks SET cost_usd = 45.5 WHERE id = 1")
        costs = await _page(kit, operator, "/costs")
        assert '<a href="/tasks/1">#1</a> ($45.50)' in costs
        judgment = await _page(kit, operator, "/judgment")
        assert "ESCALATE" in judgment and "blocked" in judgment
        assert "rulings sent back" in judgment and "swap-check disagreements" in judgment
        assert "open" in judgment  # the arbiter's question, not answered yet
        # The outcome ledger (tribunal stats' table): the escalated ruling, still pending.
        assert "How the rulings turned out" in judgment
        ledger = judgment.split("How the rulings turned out", 1)[1].split("</table>", 1)[0]
        assert "<td>(all groups)</td><td>1</td><td>1</td>" in ledger, ledger


async def test_on_postgresql_the_dashboard_reads_the_bots_database(
    tmp_path: Path, postgres: Server
) -> None:
    # Before: the dashboard opened <data>/tribunal.db whatever TRIBUNAL_DB said, so a team on
    # PostgreSQL saw an empty dashboard (and a stray SQLite file appeared in the data folder).
    async with dashboard_kit(tmp_path, ESCALATING, db=postgres.fresh_url()) as kit:
        await _escalated(kit)
        operator = await kit.operator()
        assert "add integration tests" in await _page(kit, operator, "/")
        assert QUESTION in await _page(kit, operator, "/waiting")
        assert "How the rulings turned out" in await _page(kit, operator, "/judgment")
    assert not list(tmp_path.rglob("*.db"))
