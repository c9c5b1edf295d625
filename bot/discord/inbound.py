"""Discord messages and clicks → `rooms.base.model.Inbound`.

A room is a thread under a registered channel: `RoomRef("discord", <channel id>, <thread id>)`.
A mention at the top of a registered channel names the thread that will be opened from it, and
Discord gives a thread started from a message that message's id, so the room of a mention is
known before its thread exists. Messages anywhere else (other channels, threads of other
channels, direct messages) are not ours.

The event id is the message's id (the interaction's id for a click): the Gateway may deliver an
event again after a resume, and the store drops an id it has seen. The text handed on is the
content with the bot's own mention removed and other mentions spelled out as names; the user is
the author's id (approvers are configured by id), with the ids of their roles beside it.
"""

from __future__ import annotations

import re
from typing import Any

import discord

from rooms.base.model import Inbound, RoomRef

PLATFORM = "discord"
_USER_MENTION = re.compile(r"<@!?([0-9]+)>")
_ROLE_MENTION = re.compile(r"<@&([0-9]+)>")
_CHANNEL_MENTION = re.compile(r"<#([0-9]+)>")
_PEOPLES_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})


def room_of_channel(channel: Any, registered: frozenset[str]) -> RoomRef | None:
    """The room of a message or click in `channel`: a thread of a registered channel; None
    elsewhere. (A top-level message's room is `room_of_message`'s business.)"""
    if isinstance(channel, discord.Thread) and str(channel.parent_id) in registered:
        return RoomRef(PLATFORM, str(channel.parent_id), str(channel.id))
    return None


def role_ids(member: Any) -> frozenset[str]:
    roles = getattr(member, "roles", None) or []
    return frozenset(str(role.id) for role in roles if not role.is_default())


def plain_text(message: discord.Message, bot_id: int | None) -> str:
    """The content as a person reads it: our mention removed, others as @name / #channel."""
    names = {m.id: m.display_name for m in message.mentions}

    def user(match: re.Match[str]) -> str:
        uid = int(match.group(1))
        return "" if uid == bot_id else "@" + names.get(uid, match.group(1))

    def role(match: re.Match[str]) -> str:
        guild = message.guild
        found = guild.get_role(int(match.group(1))) if guild else None
        return "@" + (found.name if found else match.group(1))

    def channel(match: re.Match[str]) -> str:
        guild = message.guild
        found = guild.get_channel_or_thread(int(match.group(1))) if guild else None
        return "#" + (found.name if found else match.group(1))

    text = message.content
    if bot_id is not None:  # our mention only says the message is for us: gone, spaces kept one
        text = re.sub(rf"[ \t]*<@!?{bot_id}>[ \t]*", " ", text)
    text = _USER_MENTION.sub(user, text)
    text = _ROLE_MENTION.sub(role, text)
    text = _CHANNEL_MENTION.sub(channel, text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines()).strip()


def room_of_message(
    message: discord.Message, bot_id: int | None, registered: frozenset[str]
) -> RoomRef | None:
    """The room of a message, from its channel and mentions alone (nothing of its text is read):
    a thread of a registered channel, or the thread a mention at the top of one will open; None
    for messages that are not ours (other channels, top-level chatter that does not mention us,
    system messages, direct messages). The Gateway's hot path asks this once per message."""
    if message.guild is None or message.type not in _PEOPLES_TYPES:
        return None
    channel = message.channel
    if isinstance(channel, discord.Thread):
        parent = channel.parent_id
        if parent is None or str(parent) not in registered:
            return None
        return RoomRef(PLATFORM, str(parent), str(channel.id))
    if str(channel.id) not in registered or not mentions(message, bot_id):
        return None
    return RoomRef(PLATFORM, str(channel.id), str(message.id))


def mentions(message: discord.Message, bot_id: int | None) -> bool:
    return bot_id is not None and any(m.id == bot_id for m in message.mentions)


def message_inbound(message: discord.Message, bot_id: int | None, room: RoomRef) -> Inbound:
    """The Inbound of a message in `room` (what `room_of_message` found): its text as a person
    reads it and its author's roles, built off the Gateway's hot path."""
    return Inbound(
        room=room,
        user=str(message.author.id),
        text=plain_text(message, bot_id),
        event_id=f"discord:{message.id}",
        mentions_bot=mentions(message, bot_id),
        from_bot=message.author.bot or message.webhook_id is not None,
        roles=role_ids(message.author),
    )


def click_inbound(
    interaction: discord.Interaction[Any], action: str, value: str, registered: frozenset[str]
) -> Inbound | None:
    room = room_of_channel(interaction.channel, registered)
    if room is None:
        return None
    return Inbound(
        room=room,
        user=str(interaction.user.id),
        event_id=f"discord:interaction:{interaction.id}",
        action=action,
        action_value=value,
        roles=role_ids(interaction.user),
    )
