"""One command table for the chat and the console (issue 25, "one command dispatch shared by the
chat and the console"): every command word, given as a mention in a chat room and typed after a
"/" in the console room, in the same state of the same kind of task, is answered with the same
messages (text, and whether only its author sees it) and leaves the task in the same state; both
helps are the table's rows.

Each side is the real engine and store with the scripted runner; the chat side is a mention as
Slack or Discord hands it over, the console side the real `ConsoleRoom` reading a typed line.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bot.console.room import HELP, ConsoleRoom
from bot.console.screen import ConsolePlatform
from rooms.base.model import GroupPolicy, RoomRef
from rooms.base.words import COMMAND_WORDS
from rooms.commands import help_text
from rooms.core.command_table import TABLE, command_rows, opener_rows, parse
from tests.fakes.engine_kit import Kit, engine_kit
from tests.fakes.rulings import ruling_reply
from tests.fakes.runner import Script

ASK = ruling_reply(
    "ESCALATE",
    question="May it use the test database?",
    options=["yes, the test one", "no, stop"],
)
# An ESCALATE without options is not a valid ruling: the arbiter's run fails twice and the
# people are asked "Retry or close?", a question without options.
YES_NO = ruling_reply("ESCALATE", question="May it drop the old table?")
POLICY = GroupPolicy(name="g", approvers=frozenset({"boss"}))
CONSOLE_ROOM = RoomRef("console", "local", "1")

# What follows each word in the runs below: each word alone, and with what it reads after it.
# (`help` is printed by each surface in its own form: the test above holds both to the table.)
GIVEN = [
    "status",
    "approve",
    "approve use the test one",
    "reject",
    "reject not that way",
    "choose 1",
    "choose 2",
    "choose 9",
    "choose two",
    "arbitrate",
    "arbitrate now: look at the migration",
    "stop",
]
STATES: dict[str, Script] = {
    # a question with options waits for people
    "options": {"owner": ["BLOCKED\nneed a decision", "DONE\nas chosen"], "arbiter": [ASK]},
    # a question without options (approve or reject) waits for people
    "yes/no": {"owner": ["BLOCKED\nneed a decision", "DONE\ngoes on"], "arbiter": [YES_NO]},
    # the task is closed (the yes/no question rejected): the room is there, nothing open in it
    "closed": {"owner": ["BLOCKED\nneed a decision"], "arbiter": [YES_NO]},
}


def test_every_command_word_has_one_row_and_every_row_is_in_both_helps() -> None:
    words = [w for command in TABLE for w in command.words]
    assert sorted(words) == sorted(COMMAND_WORDS)
    chat = help_text(POLICY)
    for row in command_rows():
        assert f"  {row.typed('/')}" in HELP, row  # the console's line
        assert f"`{row.typed(between='` / `')}`: {row.help}" in chat, row
        assert row.help in HELP
    for row in opener_rows():  # the protocols' words, from the registry
        assert f"/{row.typed()}" in HELP and f"`{row.typed()}`" in chat


async def _answers(kit: Kit, room: RoomRef, since: int) -> list[tuple[str, str | None]]:
    await kit.settle()
    return [(p.text, p.message.private_to) for p in kit.platform.messages(room)[since:]]


async def _reached(kit: Kit, state: str) -> None:
    """The task stands where the state says, so no case tests another state by mistake."""
    task = await kit.task()
    if state == "closed":
        assert task.status == "closed"
        return
    escalation = await kit.store.open_escalation(task.id)
    assert task.status == "waiting_human" and escalation is not None
    assert len(escalation.options) == (2 if state == "options" else 0)


async def _state(kit: Kit) -> tuple[str, list[tuple[str, str | None, str | None]]]:
    task = await kit.task()
    escalations = await kit.store.escalations(task.id)
    return task.status, [(e.status, e.answer, e.answered_by) for e in escalations]


@pytest.mark.parametrize("user", ["alice", "boss"])  # the task's opener; the group's approver
@pytest.mark.parametrize("state", list(STATES))
@pytest.mark.parametrize("given", GIVEN)
async def test_chat_and_console_answer_every_command_alike(
    tmp_path: Path, given: str, state: str, user: str
) -> None:
    if state == "closed" and user == "boss":
        pytest.skip("a closed task answers everyone alike: one user is enough")
    script = STATES[state]
    results = []
    for side in ("chat", "console"):
        folder = tmp_path / side
        folder.mkdir()
        async with engine_kit(folder, script, policy=POLICY) as kit:
            if side == "console":  # the group's rooms are the console's
                kit.policies.platform, kit.policies.channel = "console", "local"
            room = kit.room if side == "chat" else CONSOLE_ROOM
            console = ConsoleRoom(
                kit.engine,
                ConsolePlatform(io.StringIO()),
                user="alice",
                lockstep=True,
            )
            if side == "chat":
                await kit.say("<@UBOT> migrate the database", user="alice")
            else:
                await console.handle_line("migrate the database")
            await kit.settle()
            if state == "closed":
                await kit.say("<@UBOT> reject", user="boss", room=room)
                await kit.settle()
            await _reached(kit, state)
            before = len(kit.platform.messages(room))
            if side == "chat":
                await kit.say(f"<@UBOT> {given}", user=user)
            else:
                console.user = user
                await console.handle_line(f"/{given}")
            answers = await _answers(kit, room, before)
            results.append((answers, await _state(kit), [c.role for c in kit.runner.calls]))
    chat, console_side = results
    assert chat == console_side
    assert chat[0], "every command is answered"


@pytest.mark.parametrize(
    ("typed", "word"),
    [("<@UBOT> ／ｓｔｏｐ", "stop"), ("@tribunal STATUS!", "status"), ("ｈｅｌｐ。", "help")],
)
def test_full_width_and_punctuated_words_are_the_same_commands(typed: str, word: str) -> None:
    assert parse(typed)[0] == word


async def test_the_consoles_own_commands_read_full_width_too() -> None:
    out = io.StringIO()
    room = ConsoleRoom(None, ConsolePlatform(out), user="alice", lockstep=True)  # type: ignore[arg-type]
    assert await room.handle_line("／ｈｅｌｐ") is True
    assert HELP in out.getvalue()
    assert await room.handle_line("／quit") is False
