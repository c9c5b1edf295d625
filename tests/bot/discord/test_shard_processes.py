"""One Discord bot over two real `tribunal serve` processes, each the owner of one of the bot's
two shards (`DISCORD_SHARD_COUNT=2`, `DISCORD_SHARD_IDS=0` / `1`), on one database, against the
fake Discord's sharded Gateway with a server on each shard (tests/fakes/slack_child.py runs
`bot.serve.serve` with the adapters the settings make, as production does).

Mentions in both servers: each reaches only its shard's process and becomes exactly one task,
worked and answered in its thread, every post once, whichever process ran the task or
delivered its posts. A shard id outside the count stops a process before it connects.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from rooms.base.model import RoomRef
from rooms.store import Store
from tests.bot.discord.kit import text_of
from tests.bot.slack.test_processes import ROOT, until_closed, until_delivered
from tests.fakes.children import stop_child
from tests.fakes.discord import (
    ALICE,
    CHANNEL_ID,
    SECOND_CHANNEL_ID,
    SECOND_GUILD_ID,
    FakeDiscord,
)


def write_config(tmp_path: Path) -> Path:
    config = tmp_path / "tribunal.toml"
    groups = ""
    for name, channel in (("first", CHANNEL_ID), ("second", SECOND_CHANNEL_ID)):
        groups += (
            f'\n[groups.{name}]\nplatform = "discord"\nchannel = "{channel}"\n'
            f'approvers = ["{ALICE}"]\n'
        )
    config.write_text(
        'backend = "local"\n\n'
        f'[tribunal]\ndb = "{tmp_path / "tribunal.db"}"\ndata = "{tmp_path / "data"}"\n' + groups
    )
    return config


def child_env(fake: FakeDiscord, shard_ids: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIBUNAL_", "DISCORD_"))}
    env.update(
        DISCORD_BOT_TOKEN=fake.token,
        DISCORD_API_URL=fake.api_url,
        DISCORD_SHARD_COUNT="2",
        DISCORD_SHARD_IDS=shard_ids,
        SLACK_CHILD_LEASE_S="30",  # nobody dies here: no lease may run out under load
        PYTHONPATH=str(ROOT),
    )
    return env


@asynccontextmanager
async def serve_shard(
    config: Path, fake: FakeDiscord, shard_ids: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.fakes.slack_child",
        str(config),
        "every_task",
        env=child_env(fake, shard_ids),
        cwd=ROOT,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield child
    finally:
        await stop_child(child)


async def test_two_processes_each_open_the_tasks_of_their_shard_exactly_once(
    tmp_path: Path,
) -> None:
    fake = FakeDiscord(shards=2)
    fake.add_guild(SECOND_GUILD_ID, SECOND_CHANNEL_ID)
    await fake.start()
    config, db = write_config(tmp_path), tmp_path / "tribunal.db"
    try:
        async with AsyncExitStack() as stack:
            for shard in ("0", "1"):
                await stack.enter_async_context(serve_shard(config, fake, shard))
            await fake.wait_until(lambda: fake.identified_shards == [0, 1], timeout=60)
            await asyncio.sleep(0.5)  # the clients' ready (they wait 0.05 s for guilds)
            first = await fake.say(ALICE, "build the parser", mention=True)  # shard 1
            second = await fake.say(
                ALICE, "build the lexer", mention=True, channel=SECOND_CHANNEL_ID
            )
            rooms = {
                1: RoomRef("discord", str(CHANNEL_ID), str(first["id"])),
                0: RoomRef("discord", str(SECOND_CHANNEL_ID), str(second["id"])),
            }
            for room in rooms.values():
                await until_closed(db, room, timeout=60)
            await until_delivered(db, "discord")
    finally:
        await fake.stop()

    # Each process connected its own shard, and each mention went to its shard's alone.
    identified = sorted(op[1]["shard"] for op in fake.gateway_ops if op[0] == "identify")
    assert identified == [[0, 2], [1, 2]]
    ids = {room.thread: shard for shard, room in rooms.items()}
    mentions = [(s, i) for s, e, i in fake.dispatched if e == "MESSAGE_CREATE" and i in ids]
    assert sorted(mentions) == sorted((shard, thread) for thread, shard in ids.items())
    assert fake.undelivered == []
    threads = [
        c.message_id for c in fake.calls if c.method == "POST" and c.path.endswith("/threads")
    ]
    assert sorted(threads) == sorted(ids)  # type: ignore[type-var]  # one thread per mention

    store = await Store.open(str(db))
    try:
        opened = [await store.latest_task_in(room) for room in rooms.values()]
        assert sorted(t.id for t in opened if t is not None) == [1, 2]
        assert await store.task(3) is None  # no mention opened a second task
    finally:
        await store.close()
    for room in rooms.values():
        said = [text_of(m) for m in fake.in_channel(room.thread)]
        done = [t for t in said if t.startswith("DONE")]
        assert done == ["DONE\nbuilt it", "DONE\nwrapped up"], said  # each post once
        assert sum("is done and closed" in t for t in said) == 1, said


async def test_a_process_given_a_shard_outside_the_count_does_not_start(tmp_path: Path) -> None:
    """`tribunal serve` itself: the settings error, exit 78, nothing connected."""
    fake = await FakeDiscord(shards=2).start()
    try:
        serve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "--config", str(write_config(tmp_path)), "serve",
            env=child_env(fake, "0,2"), cwd=tmp_path, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        async with asyncio.timeout(60):
            _, err = await serve.communicate()
        said = err.decode()
        assert serve.returncode == 78, said
        assert "discord.shard_ids (DISCORD_SHARD_IDS): 2 not a shard of 2" in said
        assert "Traceback" not in said
        assert fake.gateway_ops == []  # refused before connecting
    finally:
        await fake.stop()
