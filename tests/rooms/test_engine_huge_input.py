"""A huge message (a pasted log, a runaway agent) is stored whole, and every prompt built from it
stays bounded: the model sees the head and a note, never megabytes on every turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rooms.pair.prompting import HUMAN_TEXT_LIMIT
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
