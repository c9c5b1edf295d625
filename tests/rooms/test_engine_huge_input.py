"""A huge message (a pasted log, a runaway agent) is stored whole, and every prompt built from it
stays bounded: the model sees the head and a note, never megabytes on every turn."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from rooms.judge.detectors import TEXT_LIMIT
from rooms.pair.prompting import HUMAN_TEXT_LIMIT, PEOPLE_TEXT_BUDGET
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import say

MEGABYTES = "0123456789abcdef" * (2 * 1024 * 1024 // 16)  # 2 MiB on one line


async def test_a_huge_task_is_stored_whole_and_prompted_bounded(tmp_path: Path) -> None:
    gate = asyncio.Event()
    script = {
        "owner": [say("DONE\nread the head of the task", gate=gate), "DONE\nfixed", "DONE\nok"],
        "reviewer": ["CHANGES_REQUESTED\n- see the log", "APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("analyse this log:\n" + MEGABYTES)
        await kit.runner.wait_calls(1)
        # A second huge paste while the owner works: it reaches the next prompts.
        await kit.say("and this one too:\n" + MEGABYTES, mention=False)
        gate.set()
        await kit.settle()
        task = await kit.task()
        assert task.status == "closed"
        assert len(task.text) > 2 * 1024 * 1024  # nothing lost
        messages = await kit.store.messages(task.id)
        assert [len(m.text) for m in messages] == [len("and this one too:\n" + MEGABYTES)]
        for call in kit.runner.calls:
            assert len(call.prompt) < 3 * HUMAN_TEXT_LIMIT, (call.role, len(call.prompt))
        assert "more characters of the task cut here" in kit.runner.calls[0].prompt
        later = kit.runner.calls[-1].prompt
        assert "more characters of this message cut here" in later


async def test_many_long_messages_share_one_budget_newest_in_full(tmp_path: Path) -> None:
    """150 long messages in a room: every prompt stays within the people's budget, the newest
    message is there in full, older ones are cut and the oldest left out with a note."""
    gate = asyncio.Event()
    script = {
        "owner": [say("DONE\nv1", gate=gate), "DONE\nv2"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal fix it")
        await kit.runner.wait_calls(1)
        for i in range(150):
            await kit.say(f"note {i:03d} " + "x" * 5_000 + f" end {i:03d}", mention=False)
        gate.set()
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert len(await kit.store.messages(1)) == 150  # all stored
        for call in kit.runner.calls[1:]:
            assert len(call.prompt) < PEOPLE_TEXT_BUDGET + 30_000, len(call.prompt)
            assert f"note 149 {'x' * 5_000} end 149" in call.prompt  # the newest, whole
            assert "note 000" not in call.prompt
            assert "older messages (" in call.prompt and "are left out here" in call.prompt


async def test_detectors_run_off_the_event_loop_on_bounded_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six 4 MiB outputs must not stall every other task's lease renewals: the detectors run in
    a worker thread and read at most TEXT_LIMIT characters of each turn (1 MiB outputs here)."""
    from rooms.pair import rounds

    seen: list[tuple[bool, int]] = []
    real_check = rounds.check

    def watched(steps: Any, *args: Any, **kwargs: Any) -> Any:
        on_loop = threading.current_thread() is threading.main_thread()
        seen.append((on_loop, max(len(s.text) for s in steps)))
        return real_check(steps, *args, **kwargs)

    monkeypatch.setattr(rounds, "check", watched)
    huge = "DONE\n" + "y" * (1024 * 1024)
    script = {
        "owner": [huge, huge, "DONE\nwrapped"],
        "reviewer": ["CHANGES_REQUESTED\n" + "z" * (1024 * 1024), "APPROVED"],
    }
    async with engine_kit(tmp_path, script) as kit:
        await kit.say("@tribunal build")
        await kit.settle(timeout=120)  # what is asserted is where and on what, not how fast
        assert (await kit.task()).status == "closed"
    assert len(seen) == 4
    assert all(not on_loop for on_loop, _ in seen)
    assert all(longest <= TEXT_LIMIT for _, longest in seen)
