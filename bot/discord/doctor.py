"""`tribunal doctor` for Discord: the token, the message-content intent, the shards this process
connects (bot/discord/shards.py), and what the bot may do in each registered channel (REST only:
`GET /users/@me`, the application's flags, `GET /gateway/bot`, and the channel, guild and bot
member it computes the channel permissions from, as Discord does).

Missing Manage Webhooks is not an error: the roles then speak in labelled embeds, and the
check says which of the two is in use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import discord

from bot.discord.client import api_base
from bot.discord.factory import registered_channels
from bot.discord.shards import shards_of
from bot.settings import Settings

if TYPE_CHECKING:
    from bot.doctor.check import Check

# What the bot needs in a registered channel, by discord.Permissions attribute, as the
# developer portal names it.
NEEDED = {
    "view_channel": "View Channels",
    "send_messages": "Send Messages",
    "create_public_threads": "Create Public Threads",
    "send_messages_in_threads": "Send Messages in Threads",
    "embed_links": "Embed Links",
    "attach_files": "Attach Files",
    "read_message_history": "Read Message History",
}
MESSAGE_CONTENT = (1 << 18) | (1 << 19)  # GATEWAY_MESSAGE_CONTENT, …_LIMITED application flags


def discord_checks(settings: Settings) -> list[Check]:
    """The Discord checks, or none when no token is set (check_platforms says so)."""
    if settings.platform_value("discord", "bot_token") is None:
        return []
    return asyncio.run(discord_checks_async(settings))


async def discord_checks_async(settings: Settings) -> list[Check]:
    from bot.doctor.check import Check

    token = settings.platform_value("discord", "bot_token")
    assert token is not None
    checks: list[Check] = []
    with api_base(settings.platform_value("discord", "api_url")):
        client = discord.Client(intents=discord.Intents.none())
        try:
            try:
                me = await client.http.static_login(token)
            except discord.LoginFailure:
                return [
                    Check(
                        "discord token",
                        False,
                        "Discord refused DISCORD_BOT_TOKEN: reset "
                        "it in the developer portal (Bot → Reset Token) and set it again",
                    )
                ]
            except (discord.HTTPException, OSError) as exc:
                return [Check("discord token", False, f"Discord did not answer: {exc}")]
            bot_id = str(me["id"])
            checks.append(Check("discord token", True, f"ok (bot {me.get('username')}, {bot_id})"))
            app = await client.http.application_info()
            if int(app.get("flags") or 0) & MESSAGE_CONTENT:
                checks.append(Check("discord intents", True, "ok (message content)"))
            else:
                checks.append(
                    Check(
                        "discord intents",
                        False,
                        "turn on Message Content Intent "
                        "(developer portal → Bot → Privileged Gateway Intents)",
                    )
                )
            checks.append(await _shards_check(client.http, settings))
            channels = sorted(registered_channels(settings))
            if not channels:
                checks.append(
                    Check(
                        "discord channels",
                        False,
                        'no group has platform = "discord": the bot would answer nowhere',
                        required=False,
                    )
                )
            for channel in channels:
                checks.append(await _channel_check(client.http, channel, bot_id))
        finally:
            await client.close()
    return checks


async def _shards_check(http: Any, settings: Settings) -> Check:
    """Which shards this process connects, beside the count Discord recommends (a count below
    it is refused by the Gateway once the bot is in enough servers)."""
    from bot.doctor.check import Check

    shards = shards_of(settings)
    try:
        recommended, _url, _limits = await http.get_bot_gateway()
    except (discord.HTTPException, discord.GatewayNotFound, OSError) as exc:
        return Check("discord shards", False, f"GET /gateway/bot did not answer: {exc}")
    if shards.count is None:
        owned = f"this process connects every shard, the {recommended} Discord recommends"
        return Check("discord shards", True, f"ok ({owned})")
    owned = f"this process connects {shards.describe()}"
    if shards.count < recommended:
        return Check(
            "discord shards",
            False,
            f"{owned}; Discord recommends {recommended} shards: raise discord.shard_count in "
            "every process (the Gateway refuses too few once the bot is in enough servers)",
            required=False,
        )
    return Check("discord shards", True, f"ok ({owned}; Discord recommends {recommended})")


async def _channel_check(http: Any, channel_id: str, bot_id: str) -> Check:
    from bot.doctor.check import Check

    name = f"discord channel {channel_id}"
    try:
        channel = await http.get_channel(channel_id)
        guild_id = channel.get("guild_id")
        if not guild_id:
            return Check(name, False, "not a server channel: register a text channel")
        guild = await http.get_guild(guild_id, with_counts=False)
        member = await http.get_member(guild_id, bot_id)
    except discord.NotFound:
        return Check(name, False, "not found, or the bot is not in its server: invite it")
    except discord.Forbidden:
        return Check(name, False, "the bot cannot see it: give it View Channels there")
    except discord.HTTPException as exc:
        return Check(name, False, f"Discord did not answer: {exc}")
    allowed = channel_permissions(guild, member, channel)
    missing = [label for attr, label in NEEDED.items() if not getattr(allowed, attr)]
    mode = "webhooks" if allowed.manage_webhooks else "embeds (no Manage Webhooks)"
    where = f"#{channel.get('name', channel_id)}"
    if missing:
        return Check(name, False, f"{where}: give the bot {', '.join(missing)}; roles: {mode}")
    return Check(name, True, f"ok ({where}; roles speak through {mode})")


def channel_permissions(
    guild: dict[str, Any], member: dict[str, Any], channel: dict[str, Any]
) -> discord.Permissions:
    """The member's permissions in the channel: @everyone and role permissions, then the
    channel's overwrites for @everyone, the member's roles and the member (Discord's order)."""
    guild_id = str(guild["id"])
    if str(guild.get("owner_id")) == str((member.get("user") or {}).get("id")):
        return discord.Permissions.all()
    roles = {str(r["id"]): int(r.get("permissions") or 0) for r in guild.get("roles") or []}
    mine = [str(r) for r in member.get("roles") or []]
    value = roles.get(guild_id, 0)
    for role in mine:
        value |= roles.get(role, 0)
    permissions = discord.Permissions(value)
    if permissions.administrator:
        return discord.Permissions.all()
    overwrites = {str(o["id"]): o for o in channel.get("permission_overwrites") or []}

    def apply(items: Iterable[dict[str, Any]]) -> None:
        deny = allow = 0
        for item in items:
            deny |= int(item.get("deny") or 0)
            allow |= int(item.get("allow") or 0)
        permissions.value = (permissions.value & ~deny) | allow

    apply([overwrites[guild_id]] if guild_id in overwrites else [])
    apply([overwrites[r] for r in mine if r in overwrites])
    user_id = str((member.get("user") or {}).get("id"))
    apply([overwrites[user_id]] if user_id in overwrites else [])
    return permissions
