"""Adapters around the engine: open_app starts them after the engine and stops them before it,
routes each room's posts to its platform's adapter, and `serve` runs until one of them ends.

Real engine, store and settings; the adapters are recording fakes (tests/fakes/platform.py) and
the runner is scripted."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import bot.app
from bot.adapter import Finishing
from bot.app import open_app
from bot.console.adapter import ConsoleAdapter
from bot.serve import configured_adapters, serve, unavailable_platforms
from bot.settings import Settings, load_settings
from rooms.base.model import Inbound, RoomRef
from rooms.engine import Engine
from tests.fakes.platform import RecordingAdapter
from tests.fakes.runner import ScriptedRunner

SLACK_ROOM = RoomRef("slack", "C1", "1700000000.000100")
CONSOLE_ROOM = RoomRef("console", "local", "1")


@pytest.fixture
def settings(clean_settings_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    (clean_settings_env / "tribunal.toml").write_text(
        '[groups.team]\nplatform = "slack"\nchannel = "C1"\napprovers = ["U1"]\n'
    )
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    return load_settings(env_file=None)


@pytest.fixture
def logged_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The real Engine, logging its start and stop into the list the adapters log into."""
    log: list[str] = []

    class LoggedEngine(Engine):
        async def start(self) -> None:
            await super().start()
            log.append("start engine")

        async def stop(self) -> None:
            log.append("stop engine")
            await super().stop()

    monkeypatch.setattr(bot.app, "Engine", LoggedEngine)
    yield log


def pair() -> ScriptedRunner:
    return ScriptedRunner(default={"owner": "DONE\nok", "reviewer": "APPROVED"})


async def test_adapters_start_after_the_engine_and_stop_before_it(
    settings: Settings, logged_engine: list[str]
) -> None:
    slack = RecordingAdapter("slack", logged_engine)
    console = RecordingAdapter("console", logged_engine)
    async with open_app(settings, slack, console, runner=pair()) as app:
        assert logged_engine == ["start engine", "start slack", "start console"]
        assert slack.engine is app.engine and console.engine is app.engine
        assert app.engine.platforms == frozenset({"slack", "console"})
    assert logged_engine[3:] == ["stop console", "stop slack", "stop engine"]


async def test_an_adapter_that_fails_to_start_stops_the_ones_started(
    settings: Settings, logged_engine: list[str]
) -> None:
    class Broken(RecordingAdapter):
        async def start(self, engine: object) -> None:
            raise ConnectionError("cannot reach the platform")

    slack = RecordingAdapter("slack", logged_engine)
    with pytest.raises(ConnectionError):
        async with open_app(settings, slack, Broken("discord", logged_engine), runner=pair()):
            pytest.fail("the app must not open")
    assert logged_engine == ["start engine", "start slack", "stop slack", "stop engine"]


async def test_two_adapters_for_one_platform_are_refused_before_anything_starts(
    settings: Settings, logged_engine: list[str]
) -> None:
    with pytest.raises(ValueError, match="two adapters"):
        async with open_app(settings, RecordingAdapter("slack"), RecordingAdapter("slack")):
            pytest.fail("the app must not open")
    assert logged_engine == []


async def test_the_engine_prunes_by_the_settings_retention(settings: Settings) -> None:
    for days in (7, 0):
        chosen = settings.model_copy(update={"retention_days": days})
        async with open_app(chosen, RecordingAdapter("console"), runner=pair()) as app:
            assert app.engine.pruner.retention_days == days


async def test_each_rooms_posts_reach_its_platforms_adapter(settings: Settings) -> None:
    slack, console = RecordingAdapter("slack"), RecordingAdapter("console")
    runner = pair()
    async with open_app(settings, slack, console, runner=runner) as app:
        await app.engine.handle(Inbound(SLACK_ROOM, "U1", "<@B> fix the login", "s-1", True))
        await app.engine.handle(Inbound(CONSOLE_ROOM, "alice", "add a README", "c-1", True))
        async with asyncio.timeout(30):
            await app.engine.idle()
        for room in (SLACK_ROOM, CONSOLE_ROOM):
            task = await app.engine.latest_task_in(room)
            assert task is not None and task.status == "closed"
    assert slack.posts and console.posts
    assert {p.message.room for p in slack.posts} == {SLACK_ROOM}
    assert {p.message.room for p in console.posts} == {CONSOLE_ROOM}
    assert any("done and closed" in text for text in slack.texts(SLACK_ROOM))
    assert any("done and closed" in text for text in console.texts(CONSOLE_ROOM))
    assert sorted(c.spec.group for c in runner.calls) == ["console"] * 3 + ["team"] * 3


class Ending(RecordingAdapter):
    """An adapter that ends on its own when `done` is set (like the console at /quit)."""

    def __init__(self, platform: str, log: list[str]) -> None:
        super().__init__(platform, log)
        self.done = asyncio.Event()

    async def finished(self) -> None:
        await self.done.wait()


async def test_serve_runs_until_an_adapter_finishes_then_stops_all(
    settings: Settings, logged_engine: list[str]
) -> None:
    server, console = RecordingAdapter("slack", logged_engine), Ending("console", logged_engine)
    assert isinstance(console, Finishing) and not isinstance(server, Finishing)
    running = asyncio.create_task(serve(settings, [server, console], runner=pair()))
    while "start console" not in logged_engine:
        await asyncio.sleep(0)
    assert not running.done()
    console.done.set()
    assert await asyncio.wait_for(running, 30) == 0
    assert logged_engine[-3:] == ["stop console", "stop slack", "stop engine"]


def test_the_console_is_served_when_no_other_platform_is(settings: Settings) -> None:
    adapters = configured_adapters(settings)
    assert [type(a) for a in adapters] == [ConsoleAdapter]
    assert unavailable_platforms(settings) == []


def test_a_token_without_an_adapter_in_this_build_is_named_and_the_console_opens(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bot.adapter

    # A build without the Discord adapter: its factory's module is not there.
    specs = {s.name: s for s in bot.adapter.platform_specs()}
    specs["discord"] = replace(specs["discord"], factory="no_discord_in_this_build:make_adapter")
    monkeypatch.setattr(bot.adapter, "_SPECS", specs)
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "not-a-real-token")
    with_token = load_settings(env_file=None)
    assert unavailable_platforms(with_token) == ["discord"]
    assert [a.platform for a in configured_adapters(with_token)] == ["console"]


def test_a_served_platform_replaces_the_console(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook Slack and Discord use: register a factory; with its token set, serve starts it
    and no console."""
    import bot.adapter

    specs = {s.name: s for s in bot.adapter.platform_specs()}
    made = RecordingAdapter("discord")
    specs["discord"] = replace(
        specs["discord"],
        factory=lambda s: made if s.platform_value("discord", "bot_token") is not None else None,
    )
    monkeypatch.setattr(bot.adapter, "_SPECS", specs)
    assert [a.platform for a in configured_adapters(settings)] == ["console"]
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "not-a-real-token")
    with_token = load_settings(env_file=None)
    assert configured_adapters(with_token) == [made]
    assert unavailable_platforms(with_token) == []


async def test_serve_runs_the_dashboard_when_a_port_is_set(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, logged_engine: list[str]
) -> None:
    import io

    import aiohttp

    monkeypatch.setenv("TRIBUNAL_DASHBOARD__PORT", "0")
    with_dashboard = load_settings(env_file=None)
    server, console = RecordingAdapter("slack", logged_engine), Ending("console", logged_engine)
    said = io.StringIO()
    running = asyncio.create_task(
        serve(with_dashboard, [server, console], runner=pair(), warn=said)
    )
    async with asyncio.timeout(30):
        while "the dashboard is on" not in said.getvalue():
            await asyncio.sleep(0.01)
    url = said.getvalue().split("the dashboard is on ", 1)[1].split()[0]
    assert url.startswith("http://127.0.0.1:")  # loopback unless configured otherwise
    async with aiohttp.ClientSession() as client, client.get(f"{url}/healthz") as response:
        assert response.status == 200 and "engine: ok" in await response.text()
    console.done.set()
    assert await asyncio.wait_for(running, 30) == 0
    async with aiohttp.ClientSession() as client:  # gone with serve
        with pytest.raises(aiohttp.ClientConnectionError):
            await client.get(f"{url}/healthz")
