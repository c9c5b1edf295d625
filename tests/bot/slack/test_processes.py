"""Slack `serve` as a real child process (tests/fakes/slack_child.py: bot.serve.serve with the
adapters built from settings, HTTP mode) against the fake Slack in this process.

- SIGKILL between a post and its outbox mark: Slack has the message, the store does not know;
  after a restart the row is handed again and recognised in the thread (metadata), not posted.
- Two processes on one database, Slack `serve` there and the console room here: each drives and
  delivers only its own platform's tasks.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from bot.chat import chat
from bot.settings import load_settings
from rooms.base.model import RoomRef, Task
from rooms.store import Store
from tests.fakes.children import stop_child
from tests.fakes.runner import ScriptedRunner
from tests.fakes.slack_api import (
    BOT_TOKEN,
    BOT_USER,
    SIGNING_SECRET,
    FakeSlack,
    Message,
    event_body,
    fake_slack,
    signed_headers,
)

ROOT = Path(__file__).resolve().parents[3]
CHANNEL = "C1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_config(tmp_path: Path) -> Path:
    config = tmp_path / "tribunal.toml"
    config.write_text(
        'backend = "local"\n\n'
        f'[tribunal]\ndb = "{tmp_path / "tribunal.db"}"\ndata = "{tmp_path / "data"}"\n\n'
        f'[groups.team]\nplatform = "slack"\nchannel = "{CHANNEL}"\napprovers = ["U0BOSS"]\n'
    )
    return config


@asynccontextmanager
async def serve_child(
    config: Path,
    script: str,
    fake: FakeSlack,
    port: int,
    gate: Path | None = None,
    lease_s: float | None = None,
) -> AsyncIterator[asyncio.subprocess.Process]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIBUNAL_", "SLACK_"))}
    env.update(
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        SLACK_API_URL=fake.api_url,
        TRIBUNAL_HTTP_PORT=str(port),
        PYTHONPATH=str(ROOT),
    )
    if gate is not None:
        env["SLACK_CHILD_GATE_FILE"] = str(gate)
    if lease_s is not None:
        env["SLACK_CHILD_LEASE_S"] = str(lease_s)
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.fakes.slack_child", str(config), script, env=env, cwd=ROOT
    )
    try:
        yield child
    finally:
        await stop_child(child)


async def mention(port: int, text: str, ts: str) -> None:
    """A signed app_mention to the child's /slack/events, retried until it listens."""
    event = {"type": "app_mention", "user": "alice", "text": f"<@{BOT_USER}> {text}", "ts": ts}
    event["channel"] = CHANNEL
    body = json.dumps(event_body(event, event_id=f"Ev{ts}"))
    url = f"http://127.0.0.1:{port}/slack/events"
    async with aiohttp.ClientSession() as http, asyncio.timeout(30):
        while True:
            try:
                async with http.post(url, data=body, headers=signed_headers(body)) as response:
                    assert response.status == 200
                    return
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)


async def task_in(db: Path, room: RoomRef) -> Task | None:
    store = await Store.open(str(db))
    try:
        return await store.latest_task_in(room)
    finally:
        await store.close()


async def until_closed(db: Path, room: RoomRef, timeout: float = 60.0) -> Task:
    async with asyncio.timeout(timeout):
        while True:
            task = await task_in(db, room)
            if task is not None and task.status == "closed":
                return task
            await asyncio.sleep(0.2)


async def until_delivered(db: Path, platform: str, timeout: float = 60.0) -> None:
    """Until no row of `platform` is pending: the last posts of a closed task go out after it
    closed, and a process stopped before then has not posted them (nor marked a post sent)."""
    store = await Store.open(str(db))
    try:
        async with asyncio.timeout(timeout):
            while await store.count_pending(platforms=frozenset({platform})):
                await asyncio.sleep(0.2)
    finally:
        await store.close()


async def test_sigkill_between_a_post_and_its_mark_does_not_post_it_twice(tmp_path: Path) -> None:
    config, port, ts = write_config(tmp_path), free_port(), "1690000500.000100"
    room = RoomRef("slack", CHANNEL, ts)
    cut_off = "the turn whose post is cut off by SIGKILL"
    async with fake_slack() as fake:
        fake.roots.add(ts)
        async with serve_child(config, "first", fake, port) as first:
            killed: list[Message] = []

            def kill_on_the_owners_post(message: Message) -> None:
                if cut_off in message.text and not killed:
                    killed.append(message)  # Slack has it; the bot never hears back
                    os.kill(first.pid, signal.SIGKILL)

            fake.on_post = kill_on_the_owners_post
            await mention(port, "build it", ts)
            async with asyncio.timeout(60):
                await first.wait()
            assert first.returncode == -signal.SIGKILL and killed
        fake.on_post = None
        store = await Store.open(str(tmp_path / "tribunal.db"))
        [row] = [r for r in await store.outbox() if cut_off in r.text]
        await store.close()
        assert row.status == "pending" and row.message_id is None  # the mark never happened
        lookups_before = len(fake.called("conversations.replies"))

        async with serve_child(config, "resume", fake, port):
            await until_closed(tmp_path / "tribunal.db", room)
            await asyncio.sleep(0.2)
        posts = [m for m in fake.thread(CHANNEL, ts) if cut_off in m.text]
        assert len(posts) == 1, [m.text for m in fake.thread(CHANNEL, ts)]
        assert len(fake.called("conversations.replies")) > lookups_before  # it looked first
        store = await Store.open(str(tmp_path / "tribunal.db"))
        [row] = [r for r in await store.outbox() if cut_off in r.text]
        rows = await store.outbox()
        await store.close()
        assert row.status == "sent" and row.message_id == posts[0].ts
        assert all(r.status == "sent" for r in rows)
        texts = [m.text for m in fake.thread(CHANNEL, ts)]
        assert len(texts) == len(set(texts)), texts  # nothing at all was posted twice
        assert any("wrapped up after the restart" in t for t in texts)


async def test_slack_serve_and_the_console_on_one_database_each_do_only_their_own(
    tmp_path: Path,
) -> None:
    config, port, ts = write_config(tmp_path), free_port(), "1690000600.000100"
    room = RoomRef("slack", CHANNEL, ts)
    async with fake_slack() as fake:
        fake.roots.add(ts)
        gate = tmp_path / "let-the-slack-owner-finish"
        # No process dies here: a lease longer than the test (see tests/fakes/slack_child.py).
        async with serve_child(config, "whole", fake, port, gate, lease_s=120):
            await mention(port, "build the slack thing", ts)
            # Meanwhile, in this process, the console room on the same database.
            console_runner = ScriptedRunner(
                {
                    "owner": ["DONE\nconsole owner", "DONE\nconsole wrap-up"],
                    "reviewer": ["APPROVED\nconsole review"],
                }
            )
            out = io.StringIO()
            settings = load_settings(config, env_file=None)
            console = asyncio.create_task(
                chat(
                    settings,
                    stdin=io.StringIO("build the console thing\n"),
                    stdout=out,
                    runner=console_runner,
                    lockstep=True,
                )
            )
            await console_runner.wait_calls(1, timeout=60)  # the console task is running
            task = await task_in(tmp_path / "tribunal.db", room)
            assert task is not None and task.status != "closed"  # both tasks open together
            gate.touch()  # now the Slack owner may finish its turn
            async with asyncio.timeout(120):
                assert await console == 0
            slack_task = await until_closed(tmp_path / "tribunal.db", room)
            await until_delivered(tmp_path / "tribunal.db", "slack")
        printed = out.getvalue()
        assert "console wrap-up" in printed and "slack" not in printed.lower()
        prompts = [c.prompt for c in console_runner.calls]
        assert len(prompts) == 3 and all("build the console thing" in p for p in prompts)
        slack_texts = "\n".join(m.text for m in fake.messages.values())
        assert "slack wrap-up" in slack_texts and "console" not in slack_texts
        store = await Store.open(str(tmp_path / "tribunal.db"))
        try:
            rows = await store.outbox()
            turns = await store.turns(slack_task.id)
        finally:
            await store.close()
        # None tried by both, nor twice.
        assert all(r.status == "sent" and r.attempts == 1 for r in rows), [
            (r.id, r.room.platform, r.status, r.attempts, r.last_error, r.text[:40]) for r in rows
        ]
        slack_ids = {r.message_id for r in rows if r.room.platform == "slack"}
        assert slack_ids and slack_ids <= set(fake.messages)
        assert not {r.message_id for r in rows if r.room.platform == "console"} & set(fake.messages)
        assert [t.output.splitlines()[-1] for t in turns] == [
            "slack owner",
            "APPROVED",
            "slack wrap-up",
        ]
