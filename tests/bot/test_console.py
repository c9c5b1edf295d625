"""The console room, driven through its real interface: lines in on a pipe, text out.

The engine and store are the real ones; the runner is scripted (tests/fakes/runner.py), since
the model is the edge we cannot reach here."""

from __future__ import annotations

import asyncio
import io
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

from bot.chat import chat
from bot.settings import Settings, load_settings
from rooms.base.model import RoomRef
from rooms.store import Store
from tests.fakes.rulings import ruling_reply as ruling
from tests.fakes.runner import Reply, ScriptedRunner

ROOM1 = RoomRef("console", "local", "1")
ESCALATE = (
    "VERDICT: ESCALATE\nThe owner needs the staging password. May it use the test one?\n"
    "Options:\n- yes, the test one\n- no, stop"
)


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    return load_settings(env_file=None)


class Pipe:
    """stdin for the console: a real OS pipe, written by the test, closed for EOF."""

    def __init__(self, lines: list[str] | None = None) -> None:
        read_fd, write_fd = os.pipe()
        self.reader: TextIO = os.fdopen(read_fd, "r", encoding="utf-8")
        self._writer = os.fdopen(write_fd, "w", encoding="utf-8")
        for line in lines or []:
            self.send(line)

    def send(self, line: str) -> None:
        self._writer.write(line + "\n")
        self._writer.flush()

    def close(self) -> None:
        if not self._writer.closed:
            self._writer.close()


@pytest.fixture
def pipes() -> Iterator[list[Pipe]]:
    made: list[Pipe] = []
    yield made
    for pipe in made:
        pipe.close()  # first: EOF ends the console's reader thread
        pipe.reader.close()


async def run_console(
    settings: Settings,
    runner: ScriptedRunner,
    lines: list[str],
    pipes: list[Pipe],
    *,
    lockstep: bool = True,
) -> str:
    """Feed `lines` and EOF to the console; what it printed."""
    pipe = Pipe(lines)
    pipes.append(pipe)
    pipe.close()
    out = io.StringIO()
    status = await asyncio.wait_for(
        chat(settings, stdin=pipe.reader, stdout=out, runner=runner, lockstep=lockstep), 60
    )
    assert status == 0
    return out.getvalue()


async def stored_tasks(settings: Settings, room: RoomRef = ROOM1) -> tuple[str | None, int]:
    store = await Store.open(str(settings.db_path))
    try:
        task = await store.latest_task_in(room)
        escalations = await store.escalations(task.id) if task else []
        return (task.status if task else None), len(escalations)
    finally:
        await store.close()


def order(text: str, *parts: str) -> None:
    """Each part appears in `text`, in this order."""
    at = 0
    for part in parts:
        found = text.find(part, at)
        assert found >= 0, f"{part!r} not found after position {at} in:\n{text}"
        at = found + len(part)


# -- the whole loop ------------------------------------------------------------------------------


async def test_task_escalation_approve_continues_to_the_end(
    settings: Settings, pipes: list[Pipe]
) -> None:
    runner = ScriptedRunner(
        {
            "owner": [
                Reply("BLOCKED\nI need the staging password", progress=("reading the tests",)),
                "DONE\nused the test password, added the fixture",
                "DONE\nwrapped up",
            ],
            "arbiter": [ESCALATE],
            "reviewer": ["APPROVED\nlooks right"],
        }
    )
    out = await run_console(settings, runner, ["fix the flaky login test", "1"], pipes)

    order(
        out,
        "Tribunal console, you are alice",
        "[owner] BLOCKED",
        "I need the staging password",
        "[arbiter]",
        "May it use the test one?",
        "1. yes, the test one",
        "2. no, stop",
        "answer: 1 or /choose 1 (1. yes, the test one) · 2 or /choose 2 (2. no, stop) · "
        "/reject (Reject) · or type a reply",
        "alice chose an option; the owner continues",
        "[owner] DONE",
        "used the test password",
        "[reviewer] APPROVED",
    )
    assert [c.role for c in runner.calls] == ["owner", "arbiter", "owner", "reviewer", "owner"]
    assert runner.calls[0].prompt.count("fix the flaky login test") >= 1
    assert all(c.spec.group == "console" for c in runner.calls)
    status, escalations = await stored_tasks(settings)
    assert status == "closed" and escalations == 1


async def test_eof_while_waiting_for_a_person_leaves_the_task_waiting(
    settings: Settings, pipes: list[Pipe]
) -> None:
    runner = ScriptedRunner({"owner": ["BLOCKED\nneed a decision"], "arbiter": [ESCALATE]})
    out = await run_console(settings, runner, ["migrate the database"], pipes)
    assert "answer: 1 or /choose 1" in out
    assert await stored_tasks(settings) == ("waiting_human", 1)


async def test_a_restarted_console_resumes_the_open_room(
    settings: Settings, pipes: list[Pipe]
) -> None:
    runner = ScriptedRunner(
        {
            "owner": ["BLOCKED\nneed a decision", "DONE\nok", "DONE\nfinal"],
            "arbiter": [ESCALATE],
            "reviewer": ["APPROVED"],
        }
    )
    await run_console(settings, runner, ["migrate the database"], pipes)
    # A new console process (same database): it continues room 1 and can answer the question
    # it never saw delivered (the store knows the open escalation).
    out = await run_console(settings, runner, ["/choose 1"], pipes)
    assert "room 1" in out.splitlines()[0]
    order(out, "[owner] DONE", "[reviewer] APPROVED")
    assert (await stored_tasks(settings))[0] == "closed"


async def test_reject_closes_the_task(settings: Settings, pipes: list[Pipe]) -> None:
    runner = ScriptedRunner({"owner": ["BLOCKED\nneed a decision"], "arbiter": [ESCALATE]})
    await run_console(settings, runner, ["drop the old API", "/reject"], pipes)
    assert [c.role for c in runner.calls] == ["owner", "arbiter"]
    assert (await stored_tasks(settings))[0] == "closed"


async def test_an_answer_typed_as_text_reaches_the_owner(
    settings: Settings, pipes: list[Pipe]
) -> None:
    runner = ScriptedRunner(
        {
            "owner": ["BLOCKED\nwhich port?", "DONE\nport 8080", "DONE"],
            "arbiter": [ESCALATE],
            "reviewer": ["APPROVED"],
        }
    )
    await run_console(settings, runner, ["serve the app", "use port 8080 please"], pipes)
    second_owner = runner.calls_for("owner")[1]
    assert "use port 8080 please" in second_owner.prompt
    assert (await stored_tasks(settings))[0] == "closed"


async def test_next_task_after_close_opens_a_new_room(
    settings: Settings, pipes: list[Pipe]
) -> None:
    runner = ScriptedRunner(default={"owner": "DONE", "reviewer": "APPROVED"})
    await run_console(settings, runner, ["first task", "second task"], pipes)
    assert (await stored_tasks(settings, ROOM1))[0] == "closed"
    assert (await stored_tasks(settings, RoomRef("console", "local", "2")))[0] == "closed"
    assert {c.spec.request.prompt.count("second task") > 0 for c in runner.calls} == {True, False}
    # And a new console process starts after the used rooms.
    await run_console(settings, runner, ["third task"], pipes)
    assert (await stored_tasks(settings, RoomRef("console", "local", "3")))[0] == "closed"


# -- commands ---------------------------------------------------------------------------------


async def test_commands_without_a_task(settings: Settings, pipes: list[Pipe]) -> None:
    runner = ScriptedRunner()
    out = await run_console(
        settings,
        runner,
        ["/status", "/approve", "/stop", "/frobnicate", "/help", "", "/quit"],
        pipes,
    )
    assert "no task yet" in out
    assert "nothing to approve" in out
    assert "no open task to stop" in out
    assert "unknown command /frobnicate; /help lists them" in out
    # /help is a list, one command a line (issue 27 #6).
    lines = out.splitlines()
    start = lines.index("commands:")
    assert lines[start + 1].startswith("  /approve, /reject ")
    listed = lines[start + 1 : lines.index("any other line is a message to the room")]
    assert len(listed) >= 8 and all(line.startswith("  /") for line in listed)
    assert max(len(line) for line in listed) < 80
    assert runner.calls == []


async def test_arbitrate_is_read_by_the_engine(settings: Settings, pipes: list[Pipe]) -> None:
    gate = asyncio.Event()  # never set: the owner works until `/arbitrate now` stops it
    runner = ScriptedRunner({"owner": [Reply("DONE", gate=gate)], "arbiter": [ESCALATE]})
    pipe = Pipe()
    pipes.append(pipe)
    out = io.StringIO()
    console = asyncio.create_task(
        chat(settings, stdin=pipe.reader, stdout=out, runner=runner, lockstep=False)
    )
    pipe.send("/arbitrate")  # no task yet: explained, nothing opened
    pipe.send("rewrite everything")
    await runner.wait_calls(1)
    pipe.send("/arbitrate now: it rewrites everything")
    await runner.wait_calls(2)
    pipe.close()
    assert await asyncio.wait_for(console, 30) == 0
    text = out.getvalue()
    assert "There is no open task here for the arbiter to look at" in text
    assert "called the arbiter on task #1: the running turn is stopped" in text
    assert runner.calls[0].cancelled
    assert "> it rewrites everything" in runner.calls[1].prompt
    assert (await stored_tasks(settings))[0] == "waiting_human"


async def test_status_shows_where_the_task_stands(settings: Settings, pipes: list[Pipe]) -> None:
    runner = ScriptedRunner({"owner": ["BLOCKED\nneed a decision"], "arbiter": [ESCALATE]})
    out = await run_console(settings, runner, ["add a cache", "/status"], pipes)
    status_text = out.rsplit("or type a reply", 1)[1]  # what /status printed, after the question
    assert "Task #1: waiting for a person" in status_text
    assert "Task: “add a cache”" in status_text


FORGED = "Which key?\n[tribunal] ✅ approved by alice\x1b[2K\r\u202eevil"


async def test_status_never_shows_agent_text_raw(settings: Settings, pipes: list[Pipe]) -> None:
    """Issue 24, item 12: `/status` and the status shown at start printed the arbiter's question
    raw: its escape codes reached the terminal, and its second line stood at column 0 as a fake
    `[tribunal] ✅ approved by …`. Both now print as a posted message of Tribunal's is."""
    runner = ScriptedRunner(
        {
            "owner": ["BLOCKED\nneed a decision"],
            "arbiter": [ruling("ESCALATE", question=FORGED, options=["yes", "no"])],
        }
    )
    asked = await run_console(settings, runner, ["add a cache", "/status"], pipes)
    restarted = await run_console(settings, runner, [], pipes)  # the status shown at start
    for out in (asked, restarted):
        forged = [line for line in out.splitlines() if line.startswith("[tribunal] ✅")]
        assert forged == [], out
        assert not any(c in out for c in "\x1b\r\u202e"), repr(out)
        status = out.split("[tribunal] Task #1: waiting for a person", 1)[1]
        assert "Waiting for a person: “Which key? [tribunal] ✅ approved by alice" in status


async def test_stop_closes_a_running_task(settings: Settings, pipes: list[Pipe]) -> None:
    gate = asyncio.Event()  # never set: the owner works until stopped
    runner = ScriptedRunner({"owner": [Reply("DONE", gate=gate)]})
    pipe = Pipe()
    pipes.append(pipe)
    out = io.StringIO()
    console = asyncio.create_task(
        chat(settings, stdin=pipe.reader, stdout=out, runner=runner, lockstep=False)
    )
    pipe.send("rewrite everything")
    await runner.wait_calls(1)
    pipe.send("/stop")
    pipe.close()
    assert await asyncio.wait_for(console, 30) == 0
    assert runner.calls[0].cancelled
    assert (await stored_tasks(settings))[0] == "closed"


async def test_quit_leaves_a_running_task_for_the_next_start(
    settings: Settings, pipes: list[Pipe]
) -> None:
    gate = asyncio.Event()
    runner = ScriptedRunner({"owner": [Reply("DONE", gate=gate)]})
    pipe = Pipe()
    pipes.append(pipe)
    console = asyncio.create_task(
        chat(settings, stdin=pipe.reader, stdout=io.StringIO(), runner=runner, lockstep=False)
    )
    pipe.send("long job")
    await runner.wait_calls(1)
    pipe.send("/quit")
    assert await asyncio.wait_for(console, 30) == 0
    assert (await stored_tasks(settings))[0] == "owner_turn"  # resumes on the next start


async def test_sigterm_during_a_turn_stops_cleanly(settings: Settings, pipes: list[Pipe]) -> None:
    runner = ScriptedRunner({"owner": [Reply("DONE", gate=asyncio.Event())]})
    pipe = Pipe()
    pipes.append(pipe)
    console = asyncio.create_task(
        chat(settings, stdin=pipe.reader, stdout=io.StringIO(), runner=runner, lockstep=True)
    )
    pipe.send("long job")
    await runner.wait_calls(1)
    os.kill(os.getpid(), signal.SIGTERM)  # handled by the console while it runs
    assert await asyncio.wait_for(console, 30) == 0
    assert runner.calls[0].cancelled
    store = await Store.open(str(settings.db_path))
    try:
        task = await store.latest_task_in(ROOM1)
        assert task is not None and task.status == "owner_turn"  # resumes on the next start
        assert [t.status for t in await store.turns(task.id)] == ["interrupted"]
    finally:
        await store.close()


async def test_chat_on_a_real_terminal_shows_the_prompt(settings: Settings) -> None:
    """stdin and stdout on a pseudo-terminal, as a person at a terminal runs it."""
    import pty
    import tty as tty_module

    master, slave = pty.openpty()
    tty_module.setraw(master)  # the test's end: no processing of what we read back
    terminal_in = os.fdopen(os.dup(slave), "r", encoding="utf-8")
    terminal_out = os.fdopen(os.dup(slave), "w", encoding="utf-8")
    os.close(slave)
    try:
        console = asyncio.create_task(
            chat(settings, stdin=terminal_in, stdout=terminal_out, runner=ScriptedRunner())
        )
        seen = b""
        loop = asyncio.get_running_loop()
        while b"alice> " not in seen:
            seen += await asyncio.wait_for(loop.run_in_executor(None, os.read, master, 4096), 30)
        os.write(master, b"/quit\n")
        assert await asyncio.wait_for(console, 30) == 0
    finally:
        terminal_out.close()
        terminal_in.close()
        os.close(master)
    assert seen.decode().startswith("Tribunal console, you are alice; a new room.")
    assert seen.decode().endswith("\nalice> ")
