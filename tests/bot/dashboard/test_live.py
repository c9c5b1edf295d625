"""The live part: the store's change mark moves with every kind of change, and a part asked for
by many pages at once after one change is rendered once (single flight), again after the next."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.dashboard.live import PartCache, ProgressLines
from rooms.base.model import Outbound, RoomRef
from tests.bot.dashboard.kit import BOSS, NOBODY, dashboard_kit
from tests.bot.slack.test_http_e2e import ESCALATING


async def test_the_change_mark_moves_with_tasks_turns_and_questions(tmp_path: Path) -> None:
    async with dashboard_kit(tmp_path, ESCALATING) as kit:
        store = kit.running.dashboard.store
        empty = await store.change_mark()
        thread = await kit.slack.mention("add integration tests")
        await kit.slack.settle()
        escalated = await store.change_mark()
        assert escalated != empty
        assert await store.change_mark() == escalated  # nothing happened: the same mark
        await kit.slack.reply(thread, "not an approver", user=NOBODY)  # refused: nothing stored
        await kit.slack.settle()
        assert await store.change_mark() == escalated
        await kit.slack.reply(thread, "use the mock", user=BOSS)  # the answer
        await kit.slack.settle()
        assert await store.change_mark() != escalated


async def test_pages_asking_at_once_share_one_render() -> None:
    cache = PartCache()
    renders = 0
    gate = asyncio.Event()

    async def render() -> bytes:
        nonlocal renders
        renders += 1
        await gate.wait()
        return f"rows {renders}".encode()

    mark = (1.0, 2)
    waiting = [asyncio.create_task(cache.get("rows", mark, 100.0, render)) for _ in range(50)]
    await asyncio.sleep(0)
    gate.set()
    assert set(await asyncio.gather(*waiting)) == {b"rows 1"} and renders == 1
    # The next change renders again; so does the same mark past the time to live.
    assert await cache.get("rows", (1.5, 3), 100.5, render) == b"rows 2"
    assert await cache.get("rows", (1.5, 3), 103.0, render) == b"rows 3"
    # With no page listening (no mark) nothing is shared.
    assert await cache.get("rows", None, 103.0, render) == b"rows 4"


async def test_a_failed_render_is_not_kept() -> None:
    cache = PartCache()
    calls = 0

    async def render() -> bytes:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the store hiccuped")
        return b"rows"

    with pytest.raises(RuntimeError):
        await cache.get("rows", (1,), 0.0, render)
    assert await cache.get("rows", (1,), 0.0, render) == b"rows"


def test_progress_lines_follow_the_chats_progress_messages() -> None:
    lines = ProgressLines()
    room = RoomRef("slack", "C1", "T1")
    lines(Outbound(room, "⏳ owner is working (turn 1): running pytest", persona="owner"))
    assert lines.lines == {room.key: "running pytest"} and lines.version == 1
    lines(Outbound(room, "⏳ owner is working (turn 1): running pytest", persona="owner"))
    assert lines.version == 1  # the same line: nothing moved
    # The bot's own posts and the outbox's are not progress, whatever they start with.
    lines(Outbound(room, "⏳ queued", persona="tribunal"))
    lines(Outbound(room, "⏳ a post", persona="owner", outbox_id=7))
    assert lines.lines == {room.key: "running pytest"}
    lines(Outbound(room, "✅ owner finished (turn 1)", persona="owner", final=True))
    assert lines.lines == {} and lines.version == 2
