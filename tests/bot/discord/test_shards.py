"""One Discord bot's shards spread over several bot processes (issue 19), in one process here:
two real adapters built by the factory from settings that give each its shard (`[discord]
shard_count = 2`, `shard_ids`), each on its own engine, on one store, against the fake
Discord's sharded Gateway (two servers, one on each shard). tests/bot/discord/
test_shard_processes.py runs the same with two `tribunal serve` processes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest

from bot.app import App, open_app
from bot.discord.adapter import DiscordAdapter
from bot.discord.factory import make_adapter
from bot.discord.shards import Shards, shard_of, shards_of
from bot.settings import Settings
from bot.settings_sections import SettingsError
from rooms.base.model import Outbound, RoomRef
from tests.bot.discord.kit import text_of, write_settings
from tests.fakes.discord import (
    ALICE,
    APPROVER_ROLE,
    CHANNEL_ID,
    GUILD_ID,
    SECOND_CHANNEL_ID,
    SECOND_GUILD_ID,
    FakeDiscord,
)
from tests.fakes.runner import ScriptedRunner
from tests.fakes.slack_child import every_task

GROUPS = (  # the second server's channel, a group of its own
    f'\n[groups.second]\nplatform = "discord"\nchannel = "{SECOND_CHANNEL_ID}"\n'
    f'approvers = ["{ALICE}"]\n'
)


@pytest.fixture
async def sharded() -> AsyncIterator[FakeDiscord]:
    server = FakeDiscord(shards=2)
    server.add_guild(SECOND_GUILD_ID, SECOND_CHANNEL_ID)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def shard_settings(
    workdir: Path, data: Path, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch, ids: str
) -> Settings:
    extra = GROUPS + f"\n[discord]\nshard_count = 2\nshard_ids = {ids}\n"
    return write_settings(workdir, data, fake, monkeypatch, extra=extra)


def test_the_fixture_puts_one_server_on_each_shard() -> None:
    assert {shard_of(GUILD_ID, 2), shard_of(SECOND_GUILD_ID, 2)} == {0, 1}


@asynccontextmanager
async def two_processes(
    workdir: Path, tmp_path: Path, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[list[tuple[App, DiscordAdapter]]]:
    """Shard 0's bot and shard 1's, on one database (one data folder)."""
    data = tmp_path / "data"
    served: list[tuple[App, DiscordAdapter]] = []
    async with AsyncExitStack() as stack:
        for ids in ("[0]", "[1]"):
            settings = shard_settings(workdir, data, fake, monkeypatch, ids)
            adapter = make_adapter(settings)
            assert adapter is not None
            runner = ScriptedRunner(decide=every_task)
            app = await stack.enter_async_context(open_app(settings, adapter, runner=runner))
            app.engine.outbox.first_backoff_s = 0.01
            served.append((app, adapter))
        yield served


async def until_closed(app: App, room: RoomRef) -> None:
    async with asyncio.timeout(20):
        while True:
            task = await app.store.latest_task_in(room)
            if task is not None and task.status == "closed":
                return
            await asyncio.sleep(0.05)


async def test_each_process_opens_the_tasks_of_its_shards_guilds_and_either_posts_anywhere(
    clean_settings_env: Path,
    tmp_path: Path,
    sharded: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = sharded
    async with two_processes(clean_settings_env, tmp_path, fake, monkeypatch) as served:
        (app0, shard0), (app1, shard1) = served
        assert fake.identified_shards == [0, 1]
        assert [op[1]["shard"] for op in fake.gateway_ops if op[0] == "identify"] == [
            [0, 2],
            [1, 2],
        ]
        # Each process sees only the servers of its shard.
        assert [g.id for g in shard0.client.guilds] == [SECOND_GUILD_ID]
        assert [g.id for g in shard1.client.guilds] == [GUILD_ID]

        first = await fake.say(ALICE, "build the parser", mention=True)  # GUILD_ID: shard 1
        second = await fake.say(
            ALICE, "build the lexer", mention=True, channel=SECOND_CHANNEL_ID
        )  # SECOND_GUILD_ID: shard 0
        rooms = {
            first["id"]: RoomRef("discord", str(CHANNEL_ID), str(first["id"])),
            second["id"]: RoomRef("discord", str(SECOND_CHANNEL_ID), str(second["id"])),
        }
        for room in rooms.values():
            await until_closed(app0, room)
        for _app, adapter in served:
            await adapter.drain()
        await asyncio.gather(app0.engine.idle(), app1.engine.idle())

        # Each mention reached its shard's process alone: one thread, one task each.
        mentions = [(s, i) for s, e, i in fake.dispatched if e == "MESSAGE_CREATE" and i in rooms]
        assert sorted(mentions) == sorted([(1, first["id"]), (0, second["id"])])
        threads = [c for c in fake.calls if c.method == "POST" and c.path.endswith("/threads")]
        assert sorted(c.message_id for c in threads) == sorted(rooms)  # type: ignore[type-var]
        opened = [await app0.store.latest_task_in(room) for room in rooms.values()]
        assert sorted(t.id for t in opened if t is not None) == [1, 2]
        assert await app0.store.task(3) is None  # no task opened twice
        for room in rooms.values():
            said = [text_of(m) for m in fake.in_channel(room.thread)]
            assert [t for t in said if t.startswith("DONE")] == [
                "DONE\nbuilt it",
                "DONE\nwrapped up",
            ], said  # each post once, in order
            assert sum("is done and closed" in t for t in said) == 1, said
        assert fake.undelivered == []

        # Posting is REST: shard 0's process posts in the thread of a server it never saw,
        # a role's post (through the channel's webhook) as well as the bot's own.
        room = rooms[first["id"]]
        assert shard0.client.get_channel(CHANNEL_ID) is None  # not in its cache
        webhook = await shard0.deliver(Outbound(room, "from shard 0", persona="owner"))
        plain = await shard0.deliver(Outbound(room, "tribunal from shard 0", persona="tribunal"))
        assert webhook is not None and webhook.startswith("w:")
        assert plain is not None and plain.startswith("b:")
        posted = [text_of(m) for m in fake.in_channel(room.thread)]
        assert "from shard 0" in posted and "tribunal from shard 0" in posted
        assert await shard0.mode(str(CHANNEL_ID)) == await shard1.mode(str(CHANNEL_ID))
        # Tribunal's own reply naming a role: a role mention there too (the server's roles
        # asked of Discord, not taken for a user's id).
        names = f"Only {APPROVER_ROLE} or {ALICE} may approve."
        await shard0.deliver(Outbound(room, names, persona="tribunal"))
        said = fake.in_channel(room.thread)[-1]["content"]
        assert said == f"Only <@&{APPROVER_ROLE}> or <@{ALICE}> may approve.", said


async def test_a_shard_id_outside_the_count_stops_the_start_with_a_clear_error(
    clean_settings_env: Path,
    tmp_path: Path,
    sharded: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = tmp_path / "data"
    with pytest.raises(SettingsError) as refused:
        shard_settings(clean_settings_env, data, sharded, monkeypatch, "[0, 2]")
    assert "discord.shard_ids (DISCORD_SHARD_IDS): 2 not a shard of 2" in str(refused.value)
    with pytest.raises(SettingsError) as twice:
        shard_settings(clean_settings_env, data, sharded, monkeypatch, "[1, 1]")
    assert "1 listed twice" in str(twice.value)
    monkeypatch.setenv("DISCORD_SHARD_IDS", "0,1")
    settings = shard_settings(clean_settings_env, data, sharded, monkeypatch, "[0]")
    assert make_adapter(settings).shards.ids == (0, 1)  # type: ignore[union-attr]  # env wins

    # Discord itself refuses a shard outside the count (another process's settings, a count
    # lowered in one process only): the start fails with what to change, not a traceback.
    adapter = DiscordAdapter(
        sharded.token, channels=frozenset(), api_url=sharded.api_url, guild_ready_timeout=0.05
    )
    adapter.client.shard_count, adapter.client.shard_ids = 2, [3]
    with pytest.raises(SettingsError) as closed:
        await adapter.start(object())  # type: ignore[arg-type]
    assert "Discord refused shard 3 (close code 4010" in str(closed.value)


@pytest.mark.parametrize(
    ("section", "refused"),
    [
        ("shard_ids = [0]", "discord.shard_ids (DISCORD_SHARD_IDS): set discord.shard_count too"),
        ("shard_count = 0", "discord.shard_count (DISCORD_SHARD_COUNT): must be >= 1 (got 0)"),
        ("shard_count = true", "must be a whole number (got True)"),
        ("shard_count = 2\nshard_ids = [true]", "DISCORD_SHARD_IDS.0: must be a whole number"),
        ("shard_count = 2\nshard_ids = []", "empty: list the shards this process connects"),
        ("shard_count = 4\nshard_ids = [-1, 4, 9]", "-1, 4, 9 not a shard of 4"),
    ],
)
def test_shard_settings_a_typo_cannot_pass_for(
    clean_settings_env: Path,
    tmp_path: Path,
    fake: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
    section: str,
    refused: str,
) -> None:
    with pytest.raises(SettingsError) as error:
        write_settings(
            clean_settings_env, tmp_path, fake, monkeypatch, extra=f"\n[discord]\n{section}\n"
        )
    assert refused in str(error.value)


def test_a_count_alone_is_every_shard_of_it(
    clean_settings_env: Path, tmp_path: Path, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = write_settings(
        clean_settings_env, tmp_path, fake, monkeypatch, extra="\n[discord]\nshard_count = 3\n"
    )
    assert shards_of(settings) == Shards(3, None)
    assert shards_of(settings).describe() == "every shard of 3"
