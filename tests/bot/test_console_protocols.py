"""The console opens the deliberation protocols with /debate, /resolve, /arena (or the bare
word), through the one shared command parser; /status shows the protocol's phase."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.settings import Settings, load_settings
from tests.bot.test_console import Pipe, run_console
from tests.fakes.commands import command_backend
from tests.fakes.runner import ScriptedRunner, say
from tests.rooms.resolve import scripts


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    (tmp_path / "ws").mkdir()  # where resolve's tests run
    monkeypatch.setenv("TRIBUNAL_CONSOLE__WORKSPACE", str(tmp_path / "ws"))
    return load_settings(env_file=None)


@pytest.fixture
def pipes() -> Iterator[list[Pipe]]:
    made: list[Pipe] = []
    yield made
    for pipe in made:
        pipe.close()
        pipe.reader.close()


def resolve_runner() -> ScriptedRunner:
    """Scripted agents; the test's command is run for real by the command runner."""
    t1 = scripts.test("T1", "true", A="PASS", B="FAIL")
    return ScriptedRunner(
        {
            "positions": [say(json.dumps(scripts.TWO))],
            "designer": [say(json.dumps(scripts.design(t1)))],
        },
        commands=command_backend(),
    )


async def test_slash_resolve_opens_a_resolve_task(settings: Settings, pipes: list[Pipe]) -> None:
    runner = resolve_runner()
    out = await run_console(
        settings, runner, ["/resolve does parse() drop the newline?", "/status"], pipes
    )
    assert "unknown command" not in out
    assert [c.role for c in runner.calls] == ["positions", "designer", "executor"]
    assert "[tribunal] 🧪 Resolve opened by" in out
    assert "**Resolved: A**" in out
    assert runner.calls[0].prompt.startswith("## The question\n\ndoes parse() drop the newline?")


async def test_the_bare_word_works_too_and_unknown_slash_words_stay_errors(
    settings: Settings,
    pipes: list[Pipe],
) -> None:
    runner = resolve_runner()
    out = await run_console(
        settings, runner, ["/debatee x", "resolve does parse() drop it?"], pipes
    )
    assert "unknown command /debatee" in out
    assert [c.role for c in runner.calls] == ["positions", "designer", "executor"]
