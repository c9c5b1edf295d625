"""`tribunal doctor` for Discord against the fake Discord: the token (GET /users/@me), the
message-content intent (the application's flags), and the bot's permissions in each registered
channel, saying whether roles speak through webhooks or in embeds."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from bot.discord.doctor import channel_permissions, discord_checks_async
from bot.doctor import run_doctor
from bot.settings import Settings, load_settings
from tests.fakes.discord import CHANNEL_ID, FakeDiscord


def lines(checks: list) -> dict[str, tuple[bool, str]]:  # type: ignore[type-arg]
    return {c.name: (c.ok, c.text) for c in checks}


async def test_all_good_with_webhooks(settings: Settings, fake: FakeDiscord) -> None:
    found = lines(await discord_checks_async(settings))
    assert found["discord token"] == (True, f"ok (bot tribunal, {1100000000000000001})")
    assert found["discord intents"][0]
    ok, text = found[f"discord channel {CHANNEL_ID}"]
    assert ok and "roles speak through webhooks" in text and "#tribunal" in text


async def test_without_manage_webhooks_it_says_embeds(
    settings: Settings, fake: FakeDiscord
) -> None:
    fake.webhooks_allowed = False
    ok, text = lines(await discord_checks_async(settings))[f"discord channel {CHANNEL_ID}"]
    assert ok and "embeds (no Manage Webhooks)" in text


async def test_a_refused_token_and_a_missing_intent(
    settings: Settings, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.app_flags = 0
    found = lines(await discord_checks_async(settings))
    assert found["discord intents"] == (
        False,
        "turn on Message Content Intent (developer portal → Bot → Privileged Gateway Intents)",
    )
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "wrong")
    found = lines(await discord_checks_async(load_settings(env_file=None)))
    assert list(found) == ["discord token"] and not found["discord token"][0]
    assert "wrong" not in found["discord token"][1], "never echo the token"


async def test_a_channel_the_bot_cannot_post_in_and_one_that_does_not_exist(
    clean_settings_env: Path, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.channels[str(CHANNEL_ID)]["permission_overwrites"] = [
        {"id": str(1200000000000000001), "type": 0, "allow": "0", "deny": str(1 << 38)},
    ]  # @everyone may not send in threads here
    (clean_settings_env / "tribunal.toml").write_text(
        f'[groups.a]\nplatform = "discord"\nchannel = "{CHANNEL_ID}"\n'
        '[groups.b]\nplatform = "discord"\nchannel = "999"\n'
    )
    monkeypatch.setenv("DISCORD_BOT_TOKEN", fake.token)
    monkeypatch.setenv("DISCORD_API_URL", fake.api_url)
    found = lines(await discord_checks_async(load_settings(env_file=None)))
    ok, text = found[f"discord channel {CHANNEL_ID}"]
    assert not ok and "give the bot Send Messages in Threads" in text
    ok, text = found["discord channel 999"]
    assert not ok and "not found" in text


async def test_tribunal_doctor_prints_the_discord_lines(
    settings: Settings, fake: FakeDiscord
) -> None:
    out = io.StringIO()
    await asyncio.to_thread(run_doctor, None, out=out, env_file=None)
    text = out.getvalue()
    assert "discord token: ok" in text and "discord intents: ok" in text
    assert f"discord channel {CHANNEL_ID}: ok" in text
    assert "discord shards: ok (this process connects every shard, the 1 Discord recommends)" in (
        text
    )


async def test_it_says_which_shards_this_process_connects(
    settings: Settings, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.shard_count = 4  # what GET /gateway/bot recommends
    monkeypatch.setenv("DISCORD_SHARD_COUNT", "4")
    monkeypatch.setenv("DISCORD_SHARD_IDS", "1,3")
    found = lines(await discord_checks_async(load_settings(env_file=None)))
    assert found["discord shards"] == (
        True,
        "ok (this process connects shards 1, 3 of 4; Discord recommends 4)",
    )
    monkeypatch.setenv("DISCORD_SHARD_COUNT", "2")
    monkeypatch.setenv("DISCORD_SHARD_IDS", "1")
    [shards] = [
        c
        for c in await discord_checks_async(load_settings(env_file=None))
        if c.name == "discord shards"
    ]
    assert not shards.ok and not shards.required
    assert shards.text.startswith("this process connects shard 1 of 2; Discord recommends 4")


def test_permission_arithmetic() -> None:
    guild = {
        "id": "1",
        "owner_id": "9",
        "roles": [
            {"id": "1", "permissions": str(1 << 10)},  # view channel
            {"id": "2", "permissions": str(1 << 29)},  # manage webhooks
            {"id": "3", "permissions": str(1 << 3)},  # administrator
        ],
    }
    channel = {
        "permission_overwrites": [
            {"id": "2", "allow": "0", "deny": str(1 << 29)},
            {"id": "5", "allow": str(1 << 11), "deny": "0"},
        ]
    }
    plain = channel_permissions(guild, {"user": {"id": "5"}, "roles": ["2"]}, channel)
    assert plain.view_channel and not plain.manage_webhooks and plain.send_messages
    admin = channel_permissions(guild, {"user": {"id": "6"}, "roles": ["3"]}, channel)
    assert admin.manage_webhooks
    owner = channel_permissions(guild, {"user": {"id": "9"}, "roles": []}, channel)
    assert owner.administrator


async def test_a_token_without_any_discord_group_is_a_warning(
    clean_settings_env: Path, fake: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_BOT_TOKEN", fake.token)
    monkeypatch.setenv("DISCORD_API_URL", fake.api_url)
    (check,) = [
        c
        for c in await discord_checks_async(load_settings(env_file=None))
        if c.name == "discord channels"
    ]
    assert not check.ok and not check.required and "answer nowhere" in check.text
