"""The dashboard on the real Engine (scripted runners) behind the real Slack adapter (HTTP mode,
the fake Slack), with real settings: group `g` on Slack channel C1 (approver UBOSS) and group
`h` on C2 (approver UOTHER); the operator's token is TOKEN.

    async with dashboard_kit(tmp_path, script) as kit:
        thread = await kit.slack.mention("fix the flaky test")
        signed = await kit.operator()          # an aiohttp session signed in with the token
        async with signed.get(kit.url("/")) as page: ...
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

import bot.platforms  # noqa: F401  (declares the platforms the settings read)
from bot.adapter import Router
from bot.app import App
from bot.dashboard.server import Running, running_dashboard
from bot.dashboard.token import digest
from bot.policies import SettingsPolicies
from bot.settings import Settings, load_settings
from bot.slack.adapter import SlackAdapter, make_client
from rooms.base.model import RoomRef
from rooms.engine import Engine
from rooms.store import Store
from tests.bot.slack.kit import CHANNEL, InstantClock, SlackKit
from tests.fakes.runner import Script, ScriptedRunner
from tests.fakes.slack_api import BOT_TOKEN, SIGNING_SECRET, fake_slack

TOKEN = "operator-token-for-tests"
BOSS = "UBOSS"  # approver of g (channel C1)
OTHER = "UOTHER"  # approver of h (channel C2) only
NOBODY = "UNOBODY"  # approver of nothing

TOML = """
[dashboard]
port = 0
token_sha256 = "{hash}"

[groups.g]
platform = "slack"
channel = "C1"
approvers = ["UBOSS"]

[groups.h]
platform = "slack"
channel = "C2"
approvers = ["UOTHER"]
"""


def kit_settings(tmp_path: Path, db: str | None = None) -> Settings:
    config = tmp_path / "tribunal.toml"
    config.write_text(TOML.format(hash=digest(TOKEN)), encoding="utf-8")
    return load_settings(
        config,
        env_file=None,
        data=tmp_path / "data",
        db=db or tmp_path / "tribunal.db",
        slack_bot_token=BOT_TOKEN,
        slack_signing_secret=SIGNING_SECRET,
    )


@dataclass
class DashboardKit:
    slack: SlackKit
    app: App
    running: Running
    sessions: list[aiohttp.ClientSession] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.running.port}"

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def client(self) -> aiohttp.ClientSession:
        """A new browser-like client with its own cookie jar (closed with the kit)."""
        session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        self.sessions.append(session)
        return session

    async def operator(self) -> aiohttp.ClientSession:
        session = self.client()
        async with session.post(
            self.url("/signin"), data={"token": TOKEN}, allow_redirects=False
        ) as response:
            assert response.status == 303, await response.text()
        return session

    async def link_for(self, user: str, room: RoomRef | None = None) -> str:
        """A one-time link as `@tribunal dashboard` hands it out (the engine's port)."""
        links = self.app.engine.ctx.sign_in
        assert links is not None
        link = await links.link_for(room or RoomRef("slack", CHANNEL, "T1"), user, frozenset())
        assert link is not None
        return link

    async def person(self, user: str) -> aiohttp.ClientSession:
        """A client signed in through a one-time link as Slack user `user`."""
        link = await self.link_for(user)
        secret = link.split("?s=", 1)[1]
        session = self.client()
        async with session.post(
            self.url("/signin/link"), data={"s": secret}, allow_redirects=False
        ) as response:
            assert response.status == 303, await response.text()
        return session

    async def csrf(self, session: aiohttp.ClientSession, path: str = "/") -> str:
        async with session.get(self.url(path)) as response:
            page = await response.text()
        found = re.search(r'<meta name="csrf-token" content="([^"]+)"', page)
        assert found, page[:500]
        return found.group(1)


@asynccontextmanager
async def dashboard_kit(
    tmp_path: Path,
    script: Script | None = None,
    *,
    runner: ScriptedRunner | None = None,
    db: str | None = None,
) -> AsyncIterator[DashboardKit]:
    """`db`: a PostgreSQL URL for the bot's store (default: a SQLite file in tmp_path)."""
    settings = kit_settings(tmp_path, db)
    async with fake_slack() as fake:
        client = make_client(BOT_TOKEN, fake.api_url, backoff_s=0.0, rate_limit_retries=1)
        clock = InstantClock()
        adapter = SlackAdapter(
            client,
            mode="http",
            signing_secret=SIGNING_SECRET,
            http_port=0,
            http_host="127.0.0.1",
            clock=clock,
        )
        store = await Store.open(settings.database)
        runner = runner or ScriptedRunner(script)
        policies = SettingsPolicies(settings)
        router = Router([adapter])
        engine = Engine(
            store, runner, router, policies, data_dir=str(tmp_path / "data" / "records")
        )
        engine.outbox.first_backoff_s = 0.01
        await engine.start()
        await adapter.start(engine)
        app = App(settings, store, engine, policies, router)
        http = aiohttp.ClientSession()
        kit: DashboardKit | None = None
        try:
            async with running_dashboard(app, settings) as running:
                assert running is not None
                slack = SlackKit(fake, adapter, engine, store, runner, http, clock)
                kit = DashboardKit(slack, app, running)
                yield kit
        finally:
            for session in kit.sessions if kit else []:
                await session.close()
            await http.close()
            await adapter.stop()
            await engine.stop()
            await store.close()
