"""The engine's main flows through its public API, with a scripted runner and a recording
platform: the happy path, a changes-requested round trip, unmarked outputs, the wrap-up turn,
human messages, commands, progress, and inbound filtering."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from prompts import load_prompt
from rooms.base.model import GroupPolicy, RoomRef
from rooms.judge.turn_objects import OWNER_SCHEMA, REVIEWER_SCHEMA
from tests.fakes.engine_kit import ROOM, engine_kit
from tests.fakes.runner import Reply, Script, fail, say


async def test_happy_path_owner_done_reviewer_approves_finalize_closes(tmp_path: Path) -> None:
    script: Script = {
        "owner": ["DONE\nI wrote the parser.", "DONE\nWrapped up: parser in place."],
        "reviewer": ["APPROVED\nLooks right."],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal write a parser")
        await kit.settle()

        task = await kit.task()
        assert task.status == "closed"
        assert task.text == "write a parser"
        assert kit.roles() == ["owner", "reviewer", "owner"]
        turns = await kit.store.turns(task.id)
        assert [(t.role, t.status, t.marker) for t in turns] == [
            ("owner", "done", "DONE"),
            ("reviewer", "done", "APPROVED"),
            ("owner", "done", "DONE"),
        ]
        owner, reviewer, wrap = kit.runner.calls
        # Roles, permissions, sessions and prompts as the spec says.
        assert owner.spec.request.read_only is False
        assert reviewer.spec.request.read_only is True
        assert owner.spec.request.resume_session_id is None
        assert wrap.spec.request.resume_session_id == "sess-owner-1"
        assert reviewer.spec.request.system_prompt == load_prompt("reviewer", {})
        assert owner.spec.request.system_prompt == load_prompt("owner", {})
        assert "write a parser" in owner.prompt
        assert "I wrote the parser." in reviewer.prompt
        assert "wrap up" in wrap.prompt.lower()
        # Owner and reviewer turns ask for their role's object (rooms/judge/turn_objects.py);
        # a text answer, as here, is read by its marker line.
        assert owner.spec.request.output_schema == OWNER_SCHEMA
        assert wrap.spec.request.output_schema == OWNER_SCHEMA
        assert reviewer.spec.request.output_schema == REVIEWER_SCHEMA
        # Everything was posted once, in order, each with its outbox id.
        texts = kit.platform.texts()
        assert texts[0].startswith("📋 Task opened by alice")
        assert texts[1:4] == [
            "DONE\nI wrote the parser.",
            "APPROVED\nLooks right.",
            "DONE\nWrapped up: parser in place.",
        ]
        assert texts[4] == "✅ Task #1 is done and closed."
        personas = [p.message.persona for p in kit.platform.messages()]
        assert personas == ["tribunal", "owner", "reviewer", "owner", "tribunal"]
        ids = [p.message.outbox_id for p in kit.platform.messages()]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        assert await kit.store.count_pending() == 0
        assert task.tokens == 3 * 120 and round(task.cost_usd, 4) == 0.03


async def test_changes_requested_round_trip(tmp_path: Path) -> None:
    script: Script = {
        "owner": ["DONE\nfirst try", "DONE\nadded the test", "DONE\nwrapped"],
        "reviewer": ["CHANGES_REQUESTED\n- add a test for empty input", "APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal parse numbers")
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert kit.roles() == ["owner", "reviewer", "owner", "reviewer", "owner"]
        second_owner = kit.runner.calls[2]
        assert "add a test for empty input" in second_owner.prompt
        assert second_owner.spec.request.resume_session_id == "sess-owner-1"
        second_review = kit.runner.calls[3]
        assert second_review.spec.request.resume_session_id == "sess-reviewer-2"
        assert "added the test" in second_review.prompt


async def test_unmarked_outputs_count_as_done_and_changes_requested(tmp_path: Path) -> None:
    script: Script = {
        "owner": ["I did it, I think.", "Now with tests.", "wrapped"],
        "reviewer": ["Please add tests.", "APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal do it")
        await kit.settle()
        turns = await kit.store.turns(1)
        assert [(t.role, t.marker, t.unmarked) for t in turns[:4]] == [
            ("owner", "DONE", True),
            ("reviewer", "CHANGES_REQUESTED", True),
            ("owner", "DONE", True),
            ("reviewer", "APPROVED", False),
        ]
        assert "(no marker line: counted as DONE)" in kit.platform.texts()[1]
        assert (await kit.task()).status == "closed"


async def test_a_wrap_up_that_changes_the_work_goes_back_to_review(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("x = 1\n")
    script: Script = {
        "owner": [
            say("DONE\nedited", files={"a.py": "x = 2\n"}),
            say("DONE\nrenamed a variable while tidying", files={"a.py": "y = 2\n"}),
            "DONE\nnothing more to do",
        ],
        "reviewer": ["APPROVED", "APPROVED\nstill fine"],
    }
    policy = GroupPolicy(name="g", workspace=str(workspace), approvers=frozenset({"boss"}))
    async with engine_kit(tmp_path, script, policy=policy) as kit:
        await kit.say("@tribunal tidy a.py")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "owner", "reviewer", "owner"]
        assert (await kit.task()).status == "closed"
        texts = kit.platform.texts()
        assert any("changed the work while wrapping up" in t for t in texts)
        trees = [t.tree for t in await kit.store.turns(1)]
        assert trees[0] != trees[2] and trees[2] == trees[4]


async def test_edits_of_a_failed_wrap_up_attempt_still_go_back_to_review(tmp_path: Path) -> None:
    """The wrap-up is compared with what the reviewer approved, not with the workspace at the
    start of its retry: a first attempt that edits and then fails cannot sneak its edit in."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("x = 1\n")
    script: Script = {
        "owner": [
            say("DONE\nedited", files={"a.py": "x = 2\n"}),
            fail("hard_timeout", "the runner did not finish in time", files={"a.py": "x = 3\n"}),
            "DONE\nnothing more to do",  # the retry changes nothing itself
            "DONE\nwrapped up",
        ],
        "reviewer": ["APPROVED", "APPROVED\nx = 3 is fine too"],
    }
    policy = GroupPolicy(name="g", workspace=str(workspace), approvers=frozenset({"boss"}))
    async with engine_kit(tmp_path, script, policy=policy) as kit:
        await kit.say("@tribunal tidy a.py")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer", "owner", "owner", "reviewer", "owner"]
        assert (await kit.task()).status == "closed"
        assert "x = 3 is fine too" in kit.platform.texts()[-3]


async def test_a_human_message_reaches_the_next_prompt_and_resets_rounds(tmp_path: Path) -> None:
    gate = asyncio.Event()
    script: Script = {
        "owner": ["DONE\nv1", Reply(text="DONE\nv2", gate=gate), "DONE\nwrapped"],
        "reviewer": ["CHANGES_REQUESTED\n- handle errors", "APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal build it")
        await kit.runner.wait_calls(3)  # the owner's second turn is running
        assert (await kit.task()).rounds == 1
        await kit.say("please use tabs, not spaces", user="carol", mention=False)
        assert (await kit.task()).rounds == 0
        gate.set()
        await kit.settle()
        second_review = kit.runner.calls[3]
        assert second_review.role == "reviewer"
        assert "- carol wrote:\n> please use tabs, not spaces" in second_review.prompt
        assert "please use tabs" not in kit.runner.calls[2].prompt  # sent after it started
        [message] = await kit.store.messages(1)
        assert (message.user, message.before_seq) == ("carol", 4)


async def test_stop_command_cancels_the_running_turn_and_closes(tmp_path: Path) -> None:
    script: Script = {"owner": [Reply(hang=True, progress=("reading the code",))]}
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal refactor everything")
        call = await kit.runner.wait_calls(1)
        await kit.platform.wait_for(lambda: bool(kit.platform.progress()))
        await kit.say("<@U0TRIBUNAL> stop", user="boss")
        await kit.settle()
        task = await kit.task()
        assert task.status == "closed"
        assert call.cancelled and call.finished
        [turn] = await kit.store.turns(1)
        assert turn.status == "interrupted"
        assert turn.error is not None and "stopped by boss" in turn.error
        assert "⏹ Task #1 stopped by boss. It is closed." in kit.platform.texts()
        assert kit.platform.progress()[0].text == "owner was interrupted (turn 1, 1 steps)"
        assert len(kit.runner.calls) == 1
        assert (await kit.store.task_extras(1))["lease_owner"] is None


@pytest.mark.parametrize(("who", "stops"), [("bob", False), ("alice", True), ("boss", True)])
async def test_only_an_approver_or_the_opener_can_stop(
    tmp_path: Path, who: str, stops: bool
) -> None:
    async with engine_kit(tmp_path, {"owner": [Reply(hang=True)]}) as kit:
        await kit.say("@tribunal refactor everything", user="alice")
        await kit.runner.wait_calls(1)
        await kit.say("@tribunal stop", user=who)
        await kit.platform.wait_for(lambda: len(kit.platform.texts()) >= 2)
        if stops:
            await kit.settle()
        assert ((await kit.task()).status == "closed") is stops
        if not stops:
            refusal = kit.platform.messages()[-1].message
            assert refusal.text.endswith(
                "Only an approver or the person who opened task #1 can stop it."
            )
            assert refusal.private_to == "bob"
            assert not kit.runner.calls[0].cancelled


async def test_status_and_help_and_stop_without_a_task(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, {"owner": [Reply(hang=True)]}) as kit:
        await kit.say("@tribunal status")
        await kit.say("@tribunal stop")
        await kit.say("@tribunal")
        await kit.settle()
        assert kit.platform.texts() == [
            "No open task in this room. Mention me with a task to start one.",
            "There is no open task to stop here.",
            kit.platform.texts()[2],
        ]
        assert "Mention me with a task" in kit.platform.texts()[2]
        assert await kit.store.open_task_in(ROOM) is None

        await kit.say("@tribunal make the tests pass")
        await kit.runner.wait_calls(1)
        await kit.say("@tribunal status?")
        await kit.engine.outbox.flush()
        status = kit.platform.texts()[-1]
        assert status.startswith("Task #1: the owner's turn")
        assert "Task: “make the tests pass”" in status
        assert "the owner is working on turn 1" in status
        assert status == await kit.engine.status_text(ROOM)


async def test_a_message_that_starts_with_a_command_word_is_not_a_command(
    tmp_path: Path,
) -> None:
    async with engine_kit(tmp_path, {"owner": [Reply(hang=True)]}) as kit:
        await kit.say("@tribunal stop the server from crashing on start")
        await kit.runner.wait_calls(1)
        assert (await kit.task()).text == "stop the server from crashing on start"


async def test_inbound_filtering(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, {"owner": [Reply(hang=True)]}) as kit:
        await kit.say("@tribunal from a bot", from_bot=True)
        await kit.say("@tribunal elsewhere", room=RoomRef("test", "C9", "T1"))
        await kit.say("just chatting", mention=False)
        assert await kit.store.open_task_in(ROOM) is None
        await kit.say("@tribunal the real task", event_id="Ev1")
        await kit.say("@tribunal the real task", event_id="Ev1")  # a platform retry
        await kit.runner.wait_calls(1)
        await kit.say("human note", mention=False, event_id="Ev2")
        await kit.say("human note", mention=False, event_id="Ev2")
        await kit.engine.outbox.flush()
        assert len(await kit.store.messages(1)) == 1
        assert len([t for t in kit.platform.texts() if t.startswith("📋")]) == 1
        assert len(kit.runner.calls) == 1
        assert await kit.store.latest_task_in(ROOM) == await kit.task(1)


@pytest.mark.parametrize(
    "text",
    [
        "@tribunal status",
        "@tribunal help",
        "@tribunal arbitrate",
        "@tribunal stop",
        "a note for the owner",
        "@tribunal choose 1",
        "@tribunal approve it",
    ],
)
async def test_an_event_handed_twice_acts_once(tmp_path: Path, text: str) -> None:
    """A platform replays events (a Gateway resume, a retried delivery): the engine checks the
    event id inside the write that records it, never in a read before, so the second delivery
    changes nothing, posts nothing and starts nothing, whatever the command."""
    async with engine_kit(tmp_path, {"owner": [Reply(hang=True)]}) as kit:
        await kit.say("@tribunal the task")
        await kit.runner.wait_calls(1)

        async def seen() -> tuple[object, ...]:
            await kit.engine.outbox.flush()
            task = await kit.task()
            return (
                task.status,
                task.version,
                len(await kit.store.messages(1)),
                len(kit.platform.texts()),
                len(kit.runner.calls),
            )

        await kit.say(text, mention=text.startswith("@"), event_id="replayed", user="boss")
        once = await seen()
        await kit.say(text, mention=text.startswith("@"), event_id="replayed", user="boss")
        assert await seen() == once
        await kit.click("frobnicate", "1")
        clicked = await seen()
        kit.events -= 1  # the same click id again
        await kit.click("frobnicate", "1")
        assert await seen() == clicked


async def test_progress_is_one_message_edited_in_place(tmp_path: Path) -> None:
    script: Script = {
        "owner": [Reply(text="DONE", progress=("reading", "editing"), tools=("Bash",)), "DONE"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal go")
        await kit.settle()
        progress = kit.platform.progress()
        first = progress[0]
        assert first.message.persona == "owner"
        assert first.message.text.startswith("⏳ owner is working (turn 1): reading")
        assert first.text == "owner finished (turn 1, 3 steps)"
        edits = [m for m in kit.platform.attempts if m.edit_of == first.id]
        assert edits, "the progress message was edited in place"
        assert all(p.message.outbox_id == 0 for p in progress)
