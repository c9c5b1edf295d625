"""The Discord adapter as `tribunal serve` starts it, against the fake Discord on loopback.

Settings come from a tribunal.toml and the environment (DISCORD_BOT_TOKEN, DISCORD_API_URL), the
adapter from the registered factory (`configured_adapters`, as serve builds it), and it runs on
the real engine and store through `open_app`, with a scripted runner.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import bot.discord.factory
from bot.app import App, open_app
from bot.discord.adapter import DiscordAdapter
from bot.serve import configured_adapters
from bot.settings import Settings, load_settings
from rooms.base.model import Task
from tests.fakes.discord import ALICE, APP_ID, APPROVER_ROLE, CHANNEL_ID, FakeDiscord
from tests.fakes.runner import ScriptedRunner

ESCALATE = (  # an ESCALATE offers 2 to 4 options (the engine asks the arbiter again otherwise)
    "VERDICT: ESCALATE\nThe owner needs the staging password. May it use the test one?\n"
    "Options:\n- yes, the test one\n- no, stop"
)


def write_settings(
    workdir: Path,
    data: Path,
    fake: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
    *,
    extra: str = "",
) -> Settings:
    (workdir / "tribunal.toml").write_text(
        "[groups.team]\n"
        'platform = "discord"\n'
        f'channel = "{CHANNEL_ID}"\n'
        f'approvers = ["{ALICE}", "{APPROVER_ROLE}"]\n' + extra
    )
    monkeypatch.setenv("TRIBUNAL_DATA", str(data))
    monkeypatch.setenv("DISCORD_BOT_TOKEN", fake.token)
    monkeypatch.setenv("DISCORD_API_URL", fake.api_url)
    monkeypatch.setattr(bot.discord.factory, "GUILD_READY_S", 0.05)
    return load_settings(env_file=None)


@dataclass
class Served:
    app: App
    adapter: DiscordAdapter
    fake: FakeDiscord
    runner: ScriptedRunner

    async def task(self, task_id: int = 1) -> Task:
        task = await self.app.store.task(task_id)
        assert task is not None
        return task

    async def until(self, pred: Callable[[], Any], timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while not await _value(pred()):
                await asyncio.sleep(0.01)

    async def settle(self) -> None:
        """Until the engine is idle and every event and edit is handled."""
        async with asyncio.timeout(15):
            for _ in range(3):
                await self.adapter.drain()
                await self.app.engine.idle()
                await asyncio.sleep(0.05)  # echoes of our own posts coming back


async def _value(value: Any) -> Any:
    return await value if asyncio.iscoroutine(value) else value


@asynccontextmanager
async def served(
    settings: Settings, fake: FakeDiscord, runner: ScriptedRunner
) -> AsyncIterator[Served]:
    adapters = configured_adapters(settings)
    assert [a.platform for a in adapters] == ["discord"], adapters
    adapter = adapters[0]
    assert isinstance(adapter, DiscordAdapter)
    async with open_app(settings, adapter, runner=runner) as app:
        app.engine.outbox.first_backoff_s = 0.01
        adapter.pacer._interval = 0.05  # edits in tests: coalesced, but quickly
        yield Served(app, adapter, fake, runner)


def bodies(fake: FakeDiscord, thread: str) -> list[dict[str, Any]]:
    """What was posted in a thread, in order: content, embeds, components, author."""
    return fake.in_channel(thread)


def text_of(message: dict[str, Any]) -> str:
    """A message's visible text: its content and its embeds' author, title and description."""
    parts = [message.get("content") or ""]
    for embed in message.get("embeds") or []:
        parts += [
            (embed.get("author") or {}).get("name", ""),
            embed.get("title", ""),
            embed.get("description", ""),
        ]
    return "\n".join(p for p in parts if p)


async def open_escalation(s: Served, text: str = "fix the flaky login test") -> tuple[str, str]:
    """Mention → task → … → the question's card; returns (thread id, card message id)."""
    mention = await s.fake.say(ALICE, text, mention=True)
    await s.until(lambda: s.app.store.open_escalation(1))
    await s.settle()
    thread = str(mention["id"])
    card = next(m for m in s.fake.in_channel(thread) if m["components"])
    return thread, str(card["id"])


def ephemeral_followups(fake: FakeDiscord) -> list[str]:
    """The texts sent as ephemeral follow-ups of clicks."""
    return [
        str(c.body.get("content"))
        for c in fake.calls
        if c.method == "POST"
        and c.path.startswith(f"/api/v10/webhooks/{APP_ID}/")
        and isinstance(c.body, dict)
        and c.body.get("flags", 0) & 64
    ]


def said_chose(message: dict[str, Any], user: int) -> bool:
    """The thread's notice that `user` chose one of the question's options: the engine's reply
    as text, or the decided card; the user as a mention either way."""
    text = text_of(message)
    reply = f"<@{user}> chose an option; the owner continues" in text
    card = any(e.get("title", "").startswith("🔘 Chosen") for e in message.get("embeds") or [])
    return reply or (card and f"🔘 Chosen by <@{user}>" in text)


DECIDED_TITLES = ("✅ Approved", "❌ Rejected", "💬 Answered", "🔘 Chosen")


def decision_cards(fake: FakeDiscord, thread: str) -> list[dict[str, Any]]:
    """The messages in a thread that show a decision as a card (an embed titled with it)."""
    return [
        m
        for m in fake.in_channel(thread)
        if any(e.get("title", "").startswith(DECIDED_TITLES) for e in m.get("embeds") or [])
    ]


def assert_one_decision_card(fake: FakeDiscord, thread: str, card: str, shown: str) -> None:
    """Exactly one card for the decision in the thread: the question's own card, edited to say
    who decided what (`shown`, the question kept) and when, with no buttons left."""
    (decided,) = decision_cards(fake, thread)
    assert decided["id"] == card, "the question's card was edited; no second card was posted"
    assert decided["components"] == []
    text = text_of(decided)
    assert shown in text and "May it use the test one?" in text, text
    footer = decided["embeds"][0]["footer"]["text"]
    assert re.fullmatch(r"Decided by \S+ at \d{4}-\d\d-\d\d \d\d:\d\d UTC\.", footer), footer
