"""The console opens the deliberation protocols with /debate, /resolve, /arena (or the bare
word), through the one shared command parser; /status shows the protocol's phase."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.console.room import ENGINE_COMMANDS, ConsoleRoom
from bot.settings import Settings, load_settings
from rooms.core.registry import RESERVED
from tests.bot.test_console import Pipe, run_console, stored_tasks
from tests.fakes.commands import command_backend
from tests.fakes.runner import ScriptedRunner, say
from tests.rooms.arena.test_engine import arena_runner, converging
from tests.rooms.debate import scripts as debate
from tests.rooms.debate.test_engine import script as debate_script
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


# -- what the people are told an answer does: every answer closes a deliberation -------------------

OWNERLESS = (
    "Approve to accept the outcome as it stands and close the task, Reject to turn it down and "
    "close the task, or reply here with an answer, which is kept on the task and closes it too. "
    "Nothing more runs in this {name}."
)
# A question with options offers a choice in Approve's place (rooms/core/choices.py).
OWNERLESS_CHOICE = (
    "Choose an option (its button, or `choose N`) to keep it on the task and close it, Reject to "
    "turn it down and close the task, or reply here with an answer, which is kept on the task and "
    "closes it too. Nothing more runs in this {name}."
)


def asked_without_an_owner(out: str, name: str, *, choice: bool = False) -> None:
    expected = OWNERLESS_CHOICE if choice else OWNERLESS
    assert expected.format(name=name) in " ".join(out.split())
    assert "the owner" not in out  # (a persona may be a product-owner)


async def test_a_resolve_without_a_winner_says_a_choice_closes_it(
    settings: Settings, pipes: list[Pipe]
) -> None:
    same = scripts.test("T1", A="PASS", B="PASS")
    runner = ScriptedRunner(
        {
            "positions": [say(json.dumps(scripts.TWO))] * 2,
            "designer": [
                say(json.dumps(scripts.design(same, talk="state what B expects"))),
                say(json.dumps(scripts.design(same))),
            ],
        }
    )
    out = await run_console(
        settings, runner, ["/resolve does parse() drop it?", "/choose 1"], pipes
    )
    asked_without_an_owner(out, "resolve", choice=True)
    assert "Task #1 closed: alice chose an option (kept on the task)." in out
    assert await stored_tasks(settings) == ("closed", 1)


async def test_an_irreconcilable_debate_says_an_answer_closes_it(
    settings: Settings, pipes: list[Pipe]
) -> None:
    runner = ScriptedRunner(
        debate_script(referee=[say("", structured=debate.referee(irreconcilable=True))])
    )
    out = await run_console(
        settings, runner, ["/debate Move billing to the new queue", "keep the old queue"], pipes
    )
    asked_without_an_owner(out, "debate", choice=True)
    assert "Task #1 closed: alice answered (the answer is kept on the task)." in out
    assert len(runner.calls) == 9  # nothing ran after the answer
    assert await stored_tasks(settings) == ("closed", 1)


async def test_an_arena_at_a_ceiling_says_reject_closes_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pipes: list[Pipe]
) -> None:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("TRIBUNAL_CONSOLE__THRESHOLDS__MAX_TURNS", "2")
    settings = load_settings(env_file=None)
    runner = arena_runner(converging)
    out = await run_console(
        settings, runner, ["/arena Should billing move to a queue?", "/reject"], pipes
    )
    asked_without_an_owner(out, "arena")
    # A ceiling's question is a yes/no one: Approve and Reject, no option to choose.
    assert "answer: /approve (Approve) · /reject (Reject) · or type a reply" in out
    assert "/choose" not in out.split("/help for commands.")[1]
    assert "Task #1 closed: alice rejected the escalation." in out
    assert await stored_tasks(settings) == ("closed", 1)


def test_every_console_command_is_a_word_no_protocol_may_take() -> None:
    """The console checks the protocols' words before its own commands, so a protocol named
    like one would hide it: the registry refuses every one of them
    (rooms.core.registry.RESERVED)."""
    room = ConsoleRoom(None, None, user="alice", lockstep=True)  # type: ignore[arg-type]
    words = [w.removeprefix("/") for w in [*room._commands, *ENGINE_COMMANDS]]
    assert set(words) <= set(RESERVED), set(words) - set(RESERVED)
