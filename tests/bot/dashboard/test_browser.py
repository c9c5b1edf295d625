"""The dashboard in a real headless browser (Playwright driving Debian's Chromium), on the real
engine with scripted runners behind the real Slack adapter and the fake Slack: a task appears and
updates live without a reload; an approver answers in the browser and the thread's card is
edited; a non-approver's answer is refused; a stop from the dashboard stops the task. Each page
is saved as a screenshot in tests/artifacts/dashboard/."""

from __future__ import annotations

import asyncio
from pathlib import Path

from playwright.async_api import Dialog, Page, expect

from tests.bot.dashboard.kit import BOSS, TOKEN, DashboardKit, dashboard_kit
from tests.bot.slack.test_http_e2e import ESCALATING
from tests.fakes.browser import artefact, chromium
from tests.fakes.runner import Reply, ScriptedRunner

# Live changes reach a page within the watcher's interval (1 s) plus a fetch; on a loaded
# machine that can take a while: generous, since a pass is as fast as the page.
expect.set_options(timeout=20_000)

HOSTILE_TASK = 'add integration tests <script>alert("x")</script><img src=x onerror=alert(1)>'
SLACK_TEXT = HOSTILE_TASK.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


async def sign_in_operator(page: Page, kit: DashboardKit) -> None:
    await page.goto(kit.url("/signin"))
    await page.fill('input[name="token"]', TOKEN)
    await page.click("#sign-in")
    await expect(page.locator("header .who")).to_contain_text("operator")


async def sign_in_with_link(page: Page, kit: DashboardKit, user: str) -> None:
    await page.goto(await kit.link_for(user))
    await page.click("#use-link")
    await expect(page.locator("header .who")).to_contain_text(f"slack:{user}")


def dialogs_of(page: Page) -> list[str]:
    """Every dialog the page opens (an alert would be injected script running); confirms are
    accepted, as a person clicking OK."""
    seen: list[str] = []

    async def on_dialog(dialog: Dialog) -> None:
        seen.append(f"{dialog.type}: {dialog.message}")
        await dialog.accept()

    page.on("dialog", on_dialog)
    return seen


async def test_a_task_appears_and_updates_live_without_a_reload(tmp_path: Path) -> None:
    gate = asyncio.Event()
    runner = ScriptedRunner(
        {
            "owner": [
                Reply(text="DONE\nwrote the tests", gate=gate, progress=("running pytest",)),
                "DONE\nwrapped up",
            ],
            "reviewer": ["APPROVED"],
        }
    )
    async with dashboard_kit(tmp_path, runner=runner) as kit, chromium(tmp_path) as browser:
        page = await browser.new_page()
        dialogs = dialogs_of(page)
        await sign_in_operator(page, kit)
        await expect(page.locator("#live.on")).to_have_count(1)  # the event stream is open
        await page.evaluate("window.notReloaded = true")
        await kit.slack.mention(SLACK_TEXT)
        await runner.wait_calls(1)
        row = page.locator('tr[data-task="1"]')
        await expect(row).to_be_visible(timeout=10_000)  # it appeared by itself
        await expect(row.locator(".running")).to_contain_text("owner working")
        # The turn's progress line, as the thread's progress message shows it.
        await expect(row.locator(".running .progress")).to_contain_text("running pytest")
        await expect(row.locator(".text")).to_contain_text('<script>alert("x")</script>')
        await page.screenshot(path=artefact("tasks-live.png"), full_page=True)
        gate.set()
        await kit.slack.settle()
        await expect(row.locator(".status")).to_have_text("closed", timeout=10_000)
        await expect(row.locator(".turns")).to_have_text("3")  # owner, reviewer, wrap-up
        assert await page.evaluate("window.notReloaded") is True
        assert dialogs == []  # the script in the task's text never ran
        await page.screenshot(path=artefact("tasks.png"), full_page=True)


async def test_an_approver_answers_in_the_browser_and_the_card_is_edited(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit, chromium(tmp_path) as browser:
        thread = await kit.slack.mention("add integration tests")
        await kit.slack.settle()
        [card] = [m for m in kit.slack.thread(thread) if m.buttons()]
        page = await browser.new_page()
        dialogs = dialogs_of(page)
        await sign_in_with_link(page, kit, BOSS)
        await page.goto(kit.url("/tasks/1"))
        await expect(page.locator(".timeline")).to_contain_text("ruling ESCALATE")
        await page.screenshot(path=artefact("task-escalated.png"), full_page=True)
        await page.click("text=Waiting for people")
        question = page.locator('section[data-question="1"]')
        await expect(question).to_contain_text("May the owner use the production key?")
        await page.screenshot(path=artefact("waiting.png"), full_page=True)
        await question.locator("button.option", has_text="1. yes").click()
        await expect(page.locator("#said-1")).to_contain_text("option 1: yes")
        await kit.slack.settle()
        # The fake Slack got the edit: the card says who chose what, its buttons are gone.
        assert card.buttons() == [] and f"Chosen by {BOSS}" in card.shown()
        # The page follows by itself: nobody is waited for any more.
        await expect(page.locator("#waiting")).to_contain_text("Nobody is waited for")
        assert dialogs == []


async def test_a_non_approvers_answer_is_refused_in_the_browser(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit, chromium(tmp_path) as browser:
        await kit.slack.mention("add integration tests")
        await kit.slack.settle()
        page = await browser.new_page()
        await sign_in_operator(page, kit)  # sees the question, is no approver of anything
        await page.goto(kit.url("/waiting"))
        question = page.locator('section[data-question="1"]')
        await expect(question).to_contain_text("Only this group's approvers")
        assert await question.locator("button.approve").count() == 0
        # The form crafted by hand in the page, with the page's own CSRF token: refused.
        status, text = await page.evaluate(
            """async () => {
                const csrf = document.querySelector('meta[name="csrf-token"]').content;
                const body = new URLSearchParams({kind: "approve", csrf});
                const r = await fetch("/questions/1/answer", {method: "POST", body});
                return [r.status, await r.text()];
            }"""
        )
        assert status == 403 and "Only an approver of this group" in text
        [escalation] = await kit.app.store.escalations(1)
        assert escalation.status == "open"


async def test_stop_from_the_dashboard_stops_the_task(tmp_path: Path) -> None:
    gate = asyncio.Event()
    runner = ScriptedRunner({"owner": [Reply(text="DONE", gate=gate)], "reviewer": ["APPROVED"]})
    async with dashboard_kit(tmp_path, runner=runner) as kit, chromium(tmp_path) as browser:
        thread = await kit.slack.mention("refactor the parser")
        await runner.wait_calls(1)
        page = await browser.new_page()
        dialogs = dialogs_of(page)
        await sign_in_with_link(page, kit, BOSS)
        await page.goto(kit.url("/tasks/1"))
        await expect(page.locator("#task-status")).to_have_text("owner_turn")
        await page.screenshot(path=artefact("task.png"), full_page=True)
        await page.click("#stop")
        await expect(page.locator("#action-said")).to_contain_text("stopped", timeout=10_000)
        await expect(page.locator("#task-status")).to_have_text("closed", timeout=10_000)
        assert dialogs == ["confirm: Stop task #1? Its work is kept, the task is closed."]
        await kit.slack.settle()
        task = await kit.app.store.task(1)
        assert task is not None and task.status == "closed"
        assert any(f"stopped by {BOSS}" in m.text for m in kit.slack.thread(thread))
        assert [c.cancelled for c in runner.calls] == [True]  # the running turn was stopped
        await page.screenshot(path=artefact("task-stopped.png"), full_page=True)


async def test_screenshots_of_costs_and_judgment(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit, chromium(tmp_path) as browser:
        await kit.slack.mention("add integration tests")
        await kit.slack.settle()
        page = await browser.new_page()
        await sign_in_operator(page, kit)
        await page.goto(kit.url("/costs"))
        await expect(page.locator("h1")).to_contain_text("Costs")
        await page.screenshot(path=artefact("costs.png"), full_page=True)
        await page.goto(kit.url("/judgment"))
        await expect(page.locator("h1")).to_contain_text("Judgment")
        await page.screenshot(path=artefact("judgment.png"), full_page=True)
        await page.goto(kit.url("/signin"))
        await page.screenshot(path=artefact("signin.png"))
