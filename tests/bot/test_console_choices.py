"""A person's choice is a choice (issue 26 #3), in the console room: the question's options are
a numbered list, answered with the number or `/choose N`; the owner's next prompt carries the
chosen option's text; a number the question does not offer changes nothing; a yes/no question
(a ceiling's) offers Approve and Reject only, and a number there is an ordinary message. The
real `chat` console over an OS pipe, the real engine and store, a scripted runner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.settings import Settings, load_settings
from rooms.store import Store
from tests.bot.test_console import ESCALATE, ROOM1, Pipe, run_console
from tests.fakes.runner import ScriptedRunner


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    return load_settings(env_file=None)


@pytest.fixture
def pipes() -> Iterator[list[Pipe]]:
    made: list[Pipe] = []
    yield made
    for pipe in made:
        pipe.close()
        pipe.reader.close()


def blocked_then_ruling() -> ScriptedRunner:
    return ScriptedRunner(
        {
            "owner": ["BLOCKED\nI need the staging password", "DONE\nas chosen", "DONE\nwrapped"],
            "arbiter": [ESCALATE],
            "reviewer": ["APPROVED\nlooks right"],
        }
    )


async def answered(settings: Settings) -> tuple[str, str | None, str | None]:
    store = await Store.open(str(settings.db_path))
    try:
        task = await store.latest_task_in(ROOM1)
        assert task is not None
        [escalation] = await store.escalations(task.id)
        return escalation.status, escalation.answer, escalation.answered_by
    finally:
        await store.close()


def people_said(runner: ScriptedRunner) -> str:
    [resumed] = [c for c in runner.calls[2:3] if c.role == "owner"]
    return resumed.prompt.split("## Messages from people")[1].split("\n## ")[0]


@pytest.mark.parametrize(
    ("line", "option", "text"),
    [("/choose 2", 2, "no, stop"), ("1", 1, "yes, the test one"), ("2", 2, "no, stop")],
)
async def test_the_number_or_choose_sends_that_options_text_to_the_owner(
    settings: Settings, pipes: list[Pipe], line: str, option: int, text: str
) -> None:
    runner = blocked_then_ruling()
    out = await run_console(settings, runner, ["fix the flaky login test", line], pipes)
    assert "answer: 1 or /choose 1 (1. yes, the test one) · 2 or /choose 2 (2. no, stop)" in out
    said = people_said(runner)
    assert f"chose option {option} of" in said and text in said
    other = "yes, the test one" if option == 2 else "no, stop"
    assert other not in said
    assert await answered(settings) == ("answered", f"option {option}: {text}", "alice")


async def test_an_option_the_question_does_not_offer_changes_nothing(
    settings: Settings, pipes: list[Pipe]
) -> None:
    runner = blocked_then_ruling()
    out = await run_console(
        settings, runner, ["fix the flaky login test", "/choose 3", "7", "/choose two"], pipes
    )
    assert "has no option 3 (it offers 1 to 2). Nothing changed." in out
    assert "has no option 7 (it offers 1 to 2). Nothing changed." in out
    assert "write `choose` and the option's number" in out
    assert [c.role for c in runner.calls] == ["owner", "arbiter"]
    assert await answered(settings) == ("open", None, None)


async def test_a_yes_no_question_offers_approve_and_reject_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pipes: list[Pipe]
) -> None:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("TRIBUNAL_CONSOLE__THRESHOLDS__MAX_TURNS", "1")
    settings = load_settings(env_file=None)
    runner = ScriptedRunner({"owner": ["DONE\nfirst go"], "reviewer": ["CHANGES_REQUESTED\nx"]})
    out = await run_console(settings, runner, ["fix the flaky login test", "1"], pipes)
    assert "reached a ceiling" in out
    assert "answer: /approve (Approve) · /reject (Reject) · or type a reply" in out
    assert "/choose" not in out.split("/help for commands.")[1]
    # A bare number on a question without options is a message (at a ceiling: a note).
    assert "noted on task #1; it still waits at its ceiling" in out
    assert await answered(settings) == ("open", None, None)
