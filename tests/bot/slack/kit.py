"""The real Engine (scripted runner) behind the real Slack adapter, against the fake Slack.

    async with slack_kit(tmp_path, {"owner": ["DONE"], "reviewer": ["APPROVED"]}) as kit:
        await kit.mention("fix the flaky test")
        await kit.settle()

HTTP mode by default: every event is a signed POST to the adapter's own listener on loopback.
Edits are paced by `InstantClock` (time moves when something waits), so no test sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp

from bot.slack.adapter import SlackAdapter, make_client
from rooms.base.model import GroupPolicy, RoomRef
from rooms.engine import Engine
from rooms.store import Store
from tests.fakes.engine_kit import StaticPolicies
from tests.fakes.runner import Script, ScriptedRunner
from tests.fakes.slack_api import (
    APP_TOKEN,
    BOT_TOKEN,
    BOT_USER,
    SIGNING_SECRET,
    FakeSlack,
    Message,
    click_body,
    event_body,
    fake_slack,
    signed_headers,
)

CHANNEL = "C1"


class InstantClock:
    """A pacing clock whose `sleep` moves time forward at once."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += max(seconds, 0.0)
        await asyncio.sleep(0)


@dataclass
class SlackKit:
    fake: FakeSlack
    adapter: SlackAdapter
    engine: Engine
    store: Store
    runner: ScriptedRunner
    http: aiohttp.ClientSession | None
    clock: InstantClock
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _events: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.adapter.bound_port}/slack/events"

    def next_ts(self) -> str:
        return f"1690000{next(self._ts):03d}.000200"

    async def post(self, body: str, headers: dict[str, str]) -> int:
        assert self.http is not None
        async with self.http.post(self.url, data=body, headers=headers) as response:
            return response.status

    async def send_event(
        self, event: dict[str, Any], *, retry_num: int | None = None, event_id: str | None = None
    ) -> int:
        self.fake.roots.add(str(event.get("ts")))  # Slack holds the message it tells us about
        body = json.dumps(event_body(event, event_id=event_id or f"Ev{next(self._events)}"))
        return await self.post(body, signed_headers(body, retry_num=retry_num))

    def message_event(
        self,
        text: str,
        *,
        user: str = "alice",
        thread_ts: str | None = None,
        ts: str | None = None,
        kind: str = "message",
        **extra: Any,
    ) -> dict[str, Any]:
        event: dict[str, Any] = {
            "type": kind,
            "user": user,
            "text": text,
            "ts": ts or self.next_ts(),
            "channel": CHANNEL,
            "channel_type": "channel",
            **extra,
        }
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        return event

    async def mention(self, text: str, *, user: str = "alice", thread_ts: str | None = None) -> str:
        """`@tribunal text` as Slack sends it (an app_mention and a message event); returns its
        ts, which names the thread of the task it opens."""
        event = self.message_event(f"<@{BOT_USER}> {text}", user=user, thread_ts=thread_ts)
        assert await self.send_event({**event, "type": "app_mention"}) == 200
        assert await self.send_event(event) == 200
        return str(event["ts"])

    async def reply(self, thread_ts: str, text: str, *, user: str = "alice") -> None:
        event = self.message_event(text, user=user, thread_ts=thread_ts)
        assert await self.send_event(event) == 200

    async def click(
        self, message: Message, action: str, *, user: str, value: str | None = None
    ) -> int:
        if value is None:  # the button's own value, as Slack sends it
            value = next(b["value"] for b in message.buttons() if b["action_id"] == action)
        payload = click_body(
            user=user,
            action=action,
            value=value,
            channel=message.channel,
            message_ts=message.ts,
            thread_ts=message.thread_ts or message.ts,
            n=next(self._events),
        )
        form = urlencode({"payload": json.dumps(payload)})
        return await self.post(
            form, signed_headers(form, content_type="application/x-www-form-urlencoded")
        )

    async def settle(self, timeout: float = 15.0) -> None:
        """Until every event is handled, the engine idle and every paced edit sent."""
        async with asyncio.timeout(timeout):
            while True:
                await self.adapter.drain()
                await self.engine.idle()
                await self.adapter.pacer.drain()
                if not self.adapter.busy:
                    return

    def thread(self, thread_ts: str) -> list[Message]:
        return self.fake.thread(CHANNEL, thread_ts)

    def room(self, thread_ts: str) -> RoomRef:
        return RoomRef("slack", CHANNEL, thread_ts)


@asynccontextmanager
async def slack_kit(
    tmp_path: Path,
    script: Script | None = None,
    *,
    approvers: frozenset[str] = frozenset({"boss"}),
    mode: str = "http",
    runner: ScriptedRunner | None = None,
) -> AsyncIterator[SlackKit]:
    async with fake_slack() as fake:
        # One retry inside slack_sdk (Retry-After plus up to 1 s of its jitter), then the outbox.
        client = make_client(BOT_TOKEN, fake.api_url, backoff_s=0.0, rate_limit_retries=1)
        clock = InstantClock()
        if mode == "http":
            adapter = SlackAdapter(
                client,
                mode="http",
                signing_secret=SIGNING_SECRET,
                http_port=0,
                http_host="127.0.0.1",
                clock=clock,
            )
        else:
            adapter = SlackAdapter(client, mode="socket", app_token=APP_TOKEN, clock=clock)
        store = await Store.open(str(tmp_path / "tribunal.db"))
        runner = runner or ScriptedRunner(script)
        policies = StaticPolicies(
            GroupPolicy(name="g", approvers=approvers), platform="slack", channel=CHANNEL
        )
        engine = Engine(store, runner, adapter, policies, data_dir=str(tmp_path / "data"))
        engine.outbox.first_backoff_s = 0.01
        await engine.start()
        await adapter.start(engine)
        http = aiohttp.ClientSession() if mode == "http" else None
        try:
            yield SlackKit(fake, adapter, engine, store, runner, http, clock)
        finally:
            if http is not None:
                await http.close()
            await adapter.stop()
            await engine.stop()
            await store.close()


class ManualClock:
    """A pacing clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.t = 1000.0
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.t + seconds, future))
        await future

    async def advance(self, seconds: float) -> None:
        self.t += seconds
        due = [(at, f) for at, f in self._sleepers if at <= self.t]
        self._sleepers = [(at, f) for at, f in self._sleepers if at > self.t]
        for _, future in due:
            if not future.done():
                future.set_result(None)
        for _ in range(3):  # let the woken tasks reach their next await
            await asyncio.sleep(0)


@asynccontextmanager
async def adapter_on_fake(
    clock: Any = None, *, rate_limit_retries: int = 3, server_error_retries: int = 2
) -> AsyncIterator[tuple[FakeSlack, SlackAdapter]]:
    """The adapter's outbound side alone (not started), posting to a fake Slack."""
    async with fake_slack() as fake:
        client = make_client(
            BOT_TOKEN,
            fake.api_url,
            backoff_s=0.0,
            rate_limit_retries=rate_limit_retries,
            server_error_retries=server_error_retries,
        )
        adapter = SlackAdapter(
            client, mode="socket", app_token=APP_TOKEN, clock=clock or InstantClock()
        )
        try:
            yield fake, adapter
        finally:
            await adapter.stop()
