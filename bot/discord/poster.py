"""Posting and editing in Discord: each `Outbound` into its room's thread under its persona.

Roles speak through a webhook of the room's channel, with the role's name and avatar, into the
thread. When the bot may not manage webhooks there (or the webhook is refused), they speak as
the bot with an embed labelled with the role's name and colour. Tribunal itself and every card
with buttons are posted by the bot (only the bot's own messages carry buttons that come back to
it as interactions). A reply meant for one person answers their click as an ephemeral
follow-up; with no click to answer it is posted in the thread.

The id returned for a message says how to edit it: `b:<id>` the bot's text, `l:<id>` the bot's
labelled embed, `w:<webhook>:<id>` a webhook's message, `e:<id>` ephemeral (not editable).
A post handed again (the outbox had not marked it sent: a crash between the post and its mark)
is not posted twice: the bot's own posts carry a nonce Discord enforces, and a role's post (a
webhook's, which takes no nonce) is first looked for in its thread, after the room's last
delivered message, by our webhook and with the same text. Mentions in posted text never ping
anyone (`AllowedMentions.none()`): an agent cannot page a channel. Rate limits are discord.py's;
a wait beyond `max_ratelimit_timeout` raises, and the outbox retries the message later.
"""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import discord

from bot.discord.buttons import decision_view
from bot.discord.client import MAX_RATELIMIT_WAIT_S
from bot.discord.links import unmask
from bot.discord.look import (
    CONTENT_LIMIT,
    card_embed,
    clip,
    is_card,
    labelled,
    named,
    parts,
    persona,
)
from bot.discord.remote_roles import RemoteRoles
from bot.render import escalation_id
from rooms.base.model import Outbound, RoomRef

log = logging.getLogger(__name__)
WEBHOOK_NAME = "Tribunal"
NO_PINGS = discord.AllowedMentions.none()
INTERACTION_LIFETIME_S = 14 * 60  # Discord's follow-up tokens live 15 minutes
# discord.py waits out a webhook's 429 however long it is: a webhook post or edit is given up
# after this (the bot's own posts raise at MAX_RATELIMIT_WAIT_S), and the outbox retries it.
WEBHOOK_WAIT_S = MAX_RATELIMIT_WAIT_S + 5.0
_REMEMBERED = 10_000
_LOOKUP_LIMIT = 200  # messages read back after the room's last delivered one


@dataclass
class _Partial:
    """How far a multi-part post got, so a retry continues instead of posting twice."""

    head: str | None = None
    posted: int = 0


class Poster:
    def __init__(self, client: discord.Client, *, webhook_wait_s: float = WEBHOOK_WAIT_S) -> None:
        self.client = client
        self.webhook_wait_s = webhook_wait_s
        self._hooks: dict[str, discord.Webhook | None] = {}
        self._hook_lock = asyncio.Lock()
        self._interactions: OrderedDict[str, tuple[float, discord.Interaction[Any]]] = OrderedDict()
        self._delivered: OrderedDict[int, str] = OrderedDict()
        self._partial: dict[int, _Partial] = {}
        self.cards: dict[int, str] = {}  # escalation id → what `post` returned for its card
        self.remote_roles = RemoteRoles(client)  # of servers on other processes' shards
        self.lookups = 0  # thread read-backs made (tests: a first delivery makes none)

    # -- what the adapter tells us ---------------------------------------------------------------

    def clicked(self, event_id: str, interaction: discord.Interaction[Any]) -> None:
        """A deferred click: replies to it (`in_reply_to`) go as its follow-ups."""
        now = time.monotonic()
        self._interactions[event_id] = (now, interaction)
        while self._interactions:
            oldest, _ = next(iter(self._interactions.values()))
            if now - oldest < INTERACTION_LIFETIME_S and len(self._interactions) <= _REMEMBERED:
                break
            self._interactions.popitem(last=False)

    async def mode(self, channel_id: str) -> str:
        """ "webhooks" when roles speak through a webhook of the channel, else "embeds"."""
        return "webhooks" if await self._webhook(channel_id) is not None else "embeds"

    # -- posting ---------------------------------------------------------------------------------

    def delivered(self, outbox_id: int | None) -> str | None:
        """What an outbox row delivered in this process came out as, if it was."""
        return self._delivered.get(outbox_id) if outbox_id else None

    async def post(self, message: Outbound) -> str:
        if message.outbox_id and message.outbox_id in self._delivered:
            return self._delivered[message.outbox_id]  # handed again: already in Discord
        posted = await self._post(message)
        if message.outbox_id:
            self._partial.pop(message.outbox_id, None)
            self._delivered[message.outbox_id] = posted
            while len(self._delivered) > _REMEMBERED:
                self._delivered.popitem(last=False)
        return posted

    async def _post(self, message: Outbound) -> str:
        message = replace(message, text=unmask(message.text))  # every link shows its target
        if message.persona == "tribunal" and not is_card(message):  # a card quotes agents
            roles = await self._role_ids(message.room)
            message = replace(message, text=named(message.text, roles))
        if message.private_to is not None:
            interaction = self._interaction(message.in_reply_to)
            if interaction is not None:
                sent = await interaction.followup.send(
                    clip(message.text, CONTENT_LIMIT),
                    ephemeral=True,
                    wait=True,
                    allowed_mentions=NO_PINGS,
                )
                return f"e:{sent.id}"
        if is_card(message):
            return await self._card(message)
        pieces, attach = parts(message.text)
        partial = await self._progress_of(message, pieces[:1] if attach else pieces, attach)
        if attach:
            if partial.head is not None:
                return partial.head
            return await self._say(message, pieces[0], file=_file(message))
        for index in range(partial.posted, len(pieces)):
            posted = await self._say(message, pieces[index], part=index)
            partial.head = partial.head or posted
            partial.posted = index + 1
        assert partial.head is not None
        return partial.head

    async def _progress_of(self, message: Outbound, pieces: list[str], attach: bool) -> _Partial:
        """How far this row's posts got: known in this process, else, on a later attempt of a
        role's post (a webhook's: Discord has no nonce for those), read back from the thread."""
        if not message.outbox_id:
            return _Partial()
        partial = self._partial.get(message.outbox_id)
        if partial is None:
            partial = _Partial()
            if message.attempt > 1 and message.persona != "tribunal":
                partial = await self._look_up(message, pieces, attach)
            self._partial[message.outbox_id] = partial
        return partial

    async def _look_up(self, message: Outbound, pieces: list[str], attach: bool) -> _Partial:
        """The pieces of `message` our webhook already posted in its thread, after the room's
        last delivered message (`message.after`; else the thread's start): rows of a room go
        out in order, so what our webhook posted since, with these texts, is this row's."""
        room = message.room
        hook = await self._webhook(room.channel)
        if hook is None:
            return _Partial()
        after = _snowflake(message.after) or int(room.thread)
        name = _file(message).filename if attach else None
        partial = _Partial()
        self.lookups += 1
        history = self.thread(room).history(
            after=discord.Object(id=after), limit=_LOOKUP_LIMIT, oldest_first=True
        )
        async for found in history:
            if partial.posted >= len(pieces) or found.webhook_id != hook.id:
                continue
            same = found.content.strip() == pieces[partial.posted].strip()
            if same and (name is None or any(a.filename == name for a in found.attachments)):
                partial.head = partial.head or f"w:{hook.id}:{found.id}"
                partial.posted += 1
        if partial.posted:
            log.info(
                "discord: outbox row %s was already posted (%s of %s parts); not posting it again",
                message.outbox_id, partial.posted, len(pieces),
            )  # fmt: skip
        return partial

    async def _card(self, message: Outbound) -> str:
        embed, too_long = card_embed(message, self._namer(message.room))
        view = decision_view(message.actions)
        file = _file(message) if too_long else None
        posted = await self._say(message, None, embed=embed, view=view, file=file)
        escalation = escalation_id(message.actions)
        if escalation is not None and escalation.isdigit():
            self.cards[int(escalation)] = posted
        return posted

    async def _say(
        self,
        message: Outbound,
        content: str | None,
        *,
        embed: discord.Embed | None = None,
        view: discord.ui.View | None = None,
        file: discord.File | None = None,
        part: int = 0,
    ) -> str:
        """One message in the room's thread, under the message's persona. The bot's own posts
        carry a nonce made of the outbox id and the part, which Discord enforces: a post handed
        again after a crash (before it was marked sent) is not posted twice."""
        room = message.room
        extra: dict[str, Any] = {"allowed_mentions": NO_PINGS}
        if file is not None:
            extra["file"] = file
        if message.persona != "tribunal" and view is None:
            hook = await self._webhook(room.channel)
            if hook is not None:
                who = persona(message.persona)
                if embed is not None:
                    extra["embed"] = embed
                try:
                    async with asyncio.timeout(self.webhook_wait_s):
                        sent = await hook.send(
                            content or "",
                            username=who.name,
                            avatar_url=who.avatar_url,
                            thread=discord.Object(id=int(room.thread)),
                            wait=True,
                            **extra,
                        )
                except (discord.Forbidden, discord.NotFound):
                    self._hooks.pop(room.channel, None)  # look again on the retry
                    raise
                return f"w:{hook.id}:{sent.id}"
            if embed is None and content is not None:
                embed, content = labelled(message, content), None
                kind = "l"
            else:
                kind = "b"
        else:
            kind = "b"
        if embed is not None:
            extra["embed"] = embed
        if view is not None:
            extra["view"] = view
        if message.outbox_id:
            extra["nonce"] = f"t{message.outbox_id}.{part}"  # Discord: at most 25 characters
        sent_by_bot = await self.thread(room).send(content, **extra)
        return f"{kind}:{sent_by_bot.id}"

    def _namer(self, room: RoomRef) -> Callable[[str], str]:
        """A Discord id → the member's or role's name in the room's server, as far as this
        process has seen them (else the id)."""
        channel = self.client.get_channel(int(room.channel))
        guild = getattr(channel, "guild", None)

        def name_of(found: str) -> str:
            if guild is None:
                return found
            member = guild.get_member(int(found))
            if member is not None:
                return str(member.display_name)
            role = guild.get_role(int(found))
            return f"@{role.name}" if role is not None else found

        return name_of

    async def _role_ids(self, room: RoomRef) -> frozenset[str]:
        """The role ids of the room's server: cached here, else asked of Discord (its server is
        on another process's shard)."""
        channel = self.client.get_channel(int(room.channel))
        guild = getattr(channel, "guild", None)
        if guild is not None:
            return frozenset(str(r.id) for r in guild.roles)
        return await self.remote_roles.of_channel(room.channel)

    def thread(self, room: RoomRef) -> discord.PartialMessageable:
        return self.client.get_partial_messageable(int(room.thread), type=None)

    # -- editing ---------------------------------------------------------------------------------

    async def edit(self, message: Outbound) -> None:
        """Edit a message posted by `post` (the id it returned) to the message's text."""
        assert message.edit_of is not None
        kind, _, rest = message.edit_of.partition(":")
        text = clip(unmask(message.text), CONTENT_LIMIT)
        room = message.room
        if message.remove:
            await self._remove(message)
            return
        if kind == "w":
            hook_id, _, message_id = rest.partition(":")
            hook = await self._webhook(room.channel)
            if hook is None or str(hook.id) != hook_id:
                raise LookupError(f"the webhook that posted {message.edit_of} is gone")
            async with asyncio.timeout(self.webhook_wait_s):
                await hook.edit_message(
                    int(message_id),
                    content=text,
                    thread=discord.Object(id=int(room.thread)),
                    allowed_mentions=NO_PINGS,
                )
            return
        if kind not in ("b", "l"):
            raise ValueError(f"cannot edit message {message.edit_of!r}")
        partial = self.thread(room).get_partial_message(int(rest))
        if kind == "l":
            await partial.edit(embed=labelled(message, text), allowed_mentions=NO_PINGS)
        else:
            await partial.edit(content=text, allowed_mentions=NO_PINGS)

    async def _remove(self, message: Outbound) -> None:
        """Delete a message `post` made (a progress message whose turn's output follows)."""
        assert message.edit_of is not None
        kind, _, rest = message.edit_of.partition(":")
        room = message.room
        try:
            if kind == "w":
                hook_id, _, message_id = rest.partition(":")
                hook = await self._webhook(room.channel)
                if hook is None or str(hook.id) != hook_id:
                    raise LookupError(f"the webhook that posted {message.edit_of} is gone")
                async with asyncio.timeout(self.webhook_wait_s):
                    await hook.delete_message(
                        int(message_id), thread=discord.Object(id=int(room.thread))
                    )
            elif kind in ("b", "l"):
                await self.thread(room).get_partial_message(int(rest)).delete()
            else:
                raise ValueError(f"cannot delete message {message.edit_of!r}")
        except discord.NotFound:
            return  # gone already

    async def show_decided(self, message: Outbound, card: str) -> None:
        """Draw a decided card (`message.card`) over the question's card `card` (the id `post`
        returned for it, a bot's message): who decided what and when, no buttons."""
        kind, _, message_id = card.partition(":")
        if kind != "b" or not message_id.isdigit():
            raise ValueError(f"cannot edit card {card!r}")
        embed, _ = card_embed(message, self._namer(message.room))
        await (
            self.thread(message.room)
            .get_partial_message(int(message_id))
            .edit(content=None, embed=embed, view=None, allowed_mentions=NO_PINGS)
        )

    # -- webhooks ----------------------------------------------------------------------------------

    async def _webhook(self, channel_id: str) -> discord.Webhook | None:
        if channel_id in self._hooks:
            return self._hooks[channel_id]
        async with self._hook_lock:
            if channel_id not in self._hooks:
                self._hooks[channel_id] = await self._find_webhook(channel_id)
        return self._hooks[channel_id]

    async def _find_webhook(self, channel_id: str) -> discord.Webhook | None:
        """Our webhook of the channel (made once, found again after a restart), or None when
        the bot may not manage the channel's webhooks."""
        channel = self.client.get_channel(int(channel_id))
        try:
            if channel is None:
                channel = await self.client.fetch_channel(int(channel_id))
            if not isinstance(channel, discord.TextChannel):
                return None
            me_there = channel.guild.me
            # Not in this process's cache (its guild is on another process's shard): no member
            # to compute permissions from, so Discord answers (403 without Manage Webhooks).
            if me_there is not None and not channel.permissions_for(me_there).manage_webhooks:
                log.info("discord: no Manage Webhooks in %s: roles speak in embeds", channel_id)
                return None
            me = self.client.user
            for hook in await channel.webhooks():
                if hook.name == WEBHOOK_NAME and me is not None and hook.user == me and hook.token:
                    return hook
            return await channel.create_webhook(name=WEBHOOK_NAME, reason="Tribunal personas")
        except discord.HTTPException as exc:  # refused, or the channel's 15 webhooks are taken
            log.info("discord: no webhook in %s (%s): roles speak in embeds", channel_id, exc)
            return None

    def _interaction(self, event_id: str | None) -> discord.Interaction[Any] | None:
        if event_id is None or event_id not in self._interactions:
            return None
        at, interaction = self._interactions[event_id]
        if time.monotonic() - at > INTERACTION_LIFETIME_S:
            return None
        return interaction


def _snowflake(delivered: str | None) -> int | None:
    """The Discord id inside what `post` returned (`w:<hook>:<id>`, `b:<id>`, …)."""
    last = (delivered or "").rpartition(":")[2]
    return int(last) if last.isdigit() else None


def _file(message: Outbound) -> discord.File:
    name = f"{message.persona}-{message.outbox_id or 'message'}.md"
    return discord.File(io.BytesIO(message.text.encode("utf-8")), filename=name)
