"""The Discord adapter (DESIGN §7): discord.py's Gateway in, its REST API out.

In: a message in one of our rooms becomes an `Inbound` for `Engine.handle`, each in a task of
its own. A mention at the top of a registered channel first opens a thread from that message
(the task's room). Our own and other bots' messages are not handed on. An event the store has
seen (the Gateway replays events after a resume) is dropped before anything is done for it.
A mention in a channel that is no group's is answered in a direct message to its author (the
channel is not set up, and what an operator does), and nothing is posted in the channel.

A click on an answer button is deferred at once (Discord wants an answer within 3 s), then
handed to the engine as it came: who may decide is the engine's business, never ours, and its
refusals and stale replies come back through the outbox as ephemeral follow-ups of the click.

Out: `deliver` posts through `Poster` (personas, cards, pieces, files, ephemeral replies), and
edits in place through `EditPacer`, coalesced to Discord's pace. A "decided" card (the engine's
reply to a click or an approver's reply in the thread) edits its question's card in place (who
decided what and when, no buttons; `Card.ref` names the escalation) and its reply is posted as
text, as Slack does: one card per decision in the thread, delivered through the outbox and so
restart-safe (after a restart the card is found by its outbox key through the engine).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import discord

from bot.adapter import click_failed, task_of
from bot.discord.client import (
    MAX_RATELIMIT_WAIT_S,
    TribunalClient,
    api_base,
    describe_connected,
)
from bot.discord.inbound import PLATFORM, click_inbound, message_inbound, room_of_message
from bot.discord.poster import NO_PINGS, Poster
from bot.discord.shards import ALL_SHARDS, Shards
from bot.edit_pacer import EDIT_INTERVAL_S, EditPacer
from bot.room_locks import RoomLocks
from bot.settings_sections import SettingsError
from rooms.base.model import Inbound, Outbound, RoomRef

if TYPE_CHECKING:
    from rooms.engine import Engine

log = logging.getLogger(__name__)
THREAD_ARCHIVE_MIN: Literal[10080] = 10080  # a week: tasks can wait for people that long
READY_TIMEOUT_S = 60.0
WEB_URL = "https://discord.com"  # where people open a channel or thread (not the API's base)
_REMEMBERED_CHANNELS = 10_000
_THREAD_EXISTS = 160004  # Discord: "A thread has already been created for this message"


def thread_name(text: str) -> str:
    first = " ".join(text.split())[:80] or "task"
    return f"Tribunal: {first}"


class DiscordAdapter:
    platform = PLATFORM

    def __init__(
        self,
        token: str,
        *,
        channels: frozenset[str],
        api_url: str | None = None,
        max_ratelimit_timeout: float = MAX_RATELIMIT_WAIT_S,
        guild_ready_timeout: float = 2.0,
        edit_interval: float = EDIT_INTERVAL_S,
        shards: Shards = ALL_SHARDS,
    ) -> None:
        self.token = token
        self.channels = channels
        self.api_url = api_url
        self.shards = shards
        self.client = TribunalClient(
            on_message=self._on_message,
            on_click=self._on_click,
            max_ratelimit_timeout=max_ratelimit_timeout,
            guild_ready_timeout=guild_ready_timeout,
            shard_count=shards.count,
            shard_ids=shards.ids,
        )
        self.poster = Poster(self.client)
        self.pacer = EditPacer(self.poster.edit, interval=edit_interval)
        self._engine: Engine | None = None
        self._gateway: asyncio.Task[None] | None = None
        self._stack = contextlib.ExitStack()
        self._inflight: set[asyncio.Task[None]] = set()
        self._rooms = RoomLocks()  # one event per room at a time
        self._not_ours: set[int] = set()  # uncached channels that turned out not to be rooms
        self._told: set[int] = set()  # mentions answered "not set up here" (Gateway replays)
        self._stopping = False

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self, engine: Engine) -> None:
        """Log in, connect to the Gateway, and return once it is ready (raises when the token is
        refused or the Gateway closes first)."""
        self._engine = engine
        self._stack.enter_context(api_base(self.api_url))
        try:
            try:
                await self.client.login(self.token)
            except discord.LoginFailure:
                raise SettingsError([TOKEN_REFUSED]) from None
            self._gateway = asyncio.create_task(self.client.connect(), name="discord-gateway")
            ready = asyncio.create_task(self.client.wait_until_ready())
            done, _ = await asyncio.wait(
                {ready, self._gateway}, timeout=READY_TIMEOUT_S, return_when="FIRST_COMPLETED"
            )
            if ready not in done:
                ready.cancel()
                if self._gateway in done:
                    _raise_ended(self._gateway)
                    raise ConnectionError("discord: the Gateway closed before it was ready")
                raise TimeoutError("discord: the Gateway was not ready in time")
        except BaseException:
            await self.stop()
            raise
        log.info("discord: connected as %s, %s", self.client.user, describe_connected(self.client))

    def thread_link(self, room: RoomRef) -> str | None:
        """The web address of the room's thread (a thread started from a message has the
        message's id), in the guild of its channel; None while the channel is not cached."""
        if not (room.channel.isdigit() and room.thread.isdigit()):
            return None
        guild = getattr(self.client.get_channel(int(room.channel)), "guild", None)
        if guild is None:
            return None
        return f"{WEB_URL}/channels/{guild.id}/{room.thread}"

    def alive(self) -> bool:
        """The Gateway connection running and ready (discord.py resumes by itself; while it
        does, the client is not ready)."""
        gateway = self._gateway
        return (
            gateway is not None
            and not gateway.done()
            and not self.client.is_closed()
            and self.client.is_ready()
        )

    async def stop(self) -> None:
        self._stopping = True
        if not self.client.is_closed():
            await self.client.close()
        if self._gateway is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._gateway
            self._gateway = None
        await self.drain()
        await self.pacer.close()
        self._stack.close()
        self._engine = None

    async def finished(self) -> None:
        """Returns when the Gateway connection has ended for good (discord.py reconnects and
        resumes by itself; it ends on a refused token or intent), raising what ended it, so
        `serve` ends and a service manager can restart it, rather than run deaf."""
        gateway = self._gateway
        if gateway is None:
            return
        await asyncio.wait({gateway})
        if self._stopping:
            return  # stopped on purpose
        _raise_ended(gateway)
        raise ConnectionError("discord: the Gateway connection ended")

    async def drain(self) -> None:
        """Wait until every event received so far has been handled and every edit sent."""
        while self._inflight:
            await asyncio.gather(*list(self._inflight), return_exceptions=True)
        await self.pacer.drain()

    # -- inbound ---------------------------------------------------------------------------------

    async def _on_message(self, message: discord.Message) -> None:
        """The Gateway's hot path, run for every message the bot can see: the room is looked up
        once, from the channel and the mentions, and everything else (the text, the author's
        roles, the engine) waits in a task of the message's own."""
        engine = self._engine
        if engine is None or message.author.bot or message.webhook_id is not None:
            return  # our own posts come back through the Gateway too; bots never steer a task
        if isinstance(message.channel, discord.PartialMessageable) and message.guild is not None:
            self._spawn(self._uncached(engine, message), f"discord:{message.id}")
            return
        me = self.client.user
        room = room_of_message(message, me.id if me is not None else None, self.channels)
        if room is not None:
            self._spawn(self._message(engine, message, room), f"discord:{message.id}")
        elif self._not_set_up_here(message):
            self._spawn(self._say_not_set_up(message), f"discord:{message.id}")

    def _not_set_up_here(self, message: discord.Message) -> bool:
        """A mention of us in a server channel that is no group's (nor a thread of one)."""
        me = self.client.user
        if message.guild is None or me is None or message.id in self._told:
            return False
        if not any(m.id == me.id for m in message.mentions):
            return False
        channel = message.channel
        return str(getattr(channel, "parent_id", None) or channel.id) not in self.channels

    async def _say_not_set_up(self, message: discord.Message) -> None:
        """Tell the person alone (a direct message: Discord has no ephemeral reply to a message)
        that this channel is not set up, and what an operator does about it."""
        self._told.add(message.id)
        if len(self._told) > _REMEMBERED_CHANNELS:
            self._told.clear()
        channel = message.channel
        where = str(getattr(channel, "parent_id", None) or channel.id)
        name = getattr(channel, "name", None) or where
        try:
            await message.author.send(
                NOT_SET_UP.format(name=name, channel=where), allowed_mentions=NO_PINGS
            )
        except discord.HTTPException as exc:  # DMs closed by the person's privacy settings
            log.info(
                "discord: could not tell %s that %s is no group's: %s",
                message.author.id,
                where,
                exc,
            )

    async def _uncached(self, engine: Engine, message: discord.Message) -> None:
        """A message in a channel this process has not seen: a thread archived before it
        started (Discord lists only active threads at connect). Ask Discord what it is, once."""
        channel_id = message.channel.id
        if channel_id in self._not_ours:
            return
        try:
            channel = await self.client.fetch_channel(channel_id)
        except discord.HTTPException as exc:
            log.info("discord: cannot look up channel %s: %s", channel_id, exc)
            return
        if not (isinstance(channel, discord.Thread) and str(channel.parent_id) in self.channels):
            self._not_ours.add(channel_id)
            while len(self._not_ours) > _REMEMBERED_CHANNELS:
                self._not_ours.pop()
            return
        message.channel = channel
        me = self.client.user
        room = room_of_message(message, me.id if me is not None else None, self.channels)
        if room is not None:
            await self._message(engine, message, room)

    async def _message(self, engine: Engine, message: discord.Message, room: RoomRef) -> None:
        me = self.client.user
        inbound = message_inbound(message, me.id if me is not None else None, room)
        if not isinstance(message.channel, discord.Thread):  # a mention: its thread is to open
            if await engine.seen_event(inbound.event_id):
                return  # replayed by the Gateway (a resume): its thread exists, its task too
            if not await self._open_thread(message, inbound.text):
                return  # no room without a thread; nothing was handed on
        # The engine drops an event id it has seen (a replayed thread reply) by itself.
        await self._handle(engine, inbound)

    async def _open_thread(self, message: discord.Message, text: str) -> bool:
        """The task's thread, started from the mention; False (and the person told why, in the
        channel) when the bot may not create threads there."""
        try:
            await message.create_thread(
                name=thread_name(text), auto_archive_duration=THREAD_ARCHIVE_MIN
            )
        except discord.Forbidden:
            log.warning("discord: no permission to create threads in %s", message.channel.id)
            with contextlib.suppress(discord.HTTPException):
                await message.reply(
                    "I cannot open a thread for this here: I need Create Public Threads and "
                    "Send Messages in Threads in this channel (`tribunal doctor` lists what is "
                    "missing).",
                    mention_author=False,
                    allowed_mentions=NO_PINGS,
                )
            return False
        except discord.HTTPException as exc:
            if exc.code != _THREAD_EXISTS:
                raise
        return True

    async def _on_click(
        self, interaction: discord.Interaction[Any], action: str, value: str
    ) -> None:
        await interaction.response.defer()  # first: the 3 s deadline
        engine = self._engine
        inbound = click_inbound(interaction, action, value, self.channels)
        if engine is None or inbound is None:
            await interaction.followup.send(
                "This button is not in a Tribunal room.", ephemeral=True
            )
            return
        self.poster.clicked(inbound.event_id, interaction)
        try:
            await self._handle(engine, inbound)
        except Exception:  # discord.py would log it where nobody looks, and say nothing
            where = await task_of(engine, inbound.room)
            log.exception(
                "discord: the click %s (%s %s) in %s, %s, failed",
                inbound.event_id, action, value, inbound.room.key, where,
            )  # fmt: skip
            with contextlib.suppress(discord.HTTPException):
                await interaction.followup.send(
                    click_failed(inbound.event_id), ephemeral=True, allowed_mentions=NO_PINGS
                )

    async def _handle(self, engine: Engine, inbound: Inbound) -> None:
        """Hand the event to the engine, one event per room at a time (in the order Discord sent
        them). What it decides comes back through the outbox, the decided card included."""
        async with self._rooms.hold(inbound.room.key):
            await engine.handle(inbound)

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(work, name=f"discord-inbound-{name}")
        self._inflight.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("discord: handling %s failed", task.get_name(), exc_info=task.exception())

    # -- outbound --------------------------------------------------------------------------------

    async def deliver(self, message: Outbound) -> str | None:
        if message.edit_of is not None:
            await self.pacer.edit(message)
            return message.edit_of
        if message.card is not None and message.card.kind == "decided":
            known = self.poster.delivered(message.outbox_id)
            if known is not None:
                return known  # handed again: the card was edited and the reply posted
            await self._show_decided(message)
            message = replace(message, card=None)  # the reply itself is posted as text
        posted = await self.poster.post(message)
        self.pacer.posted(message.room.channel, posted)
        return posted

    async def _show_decided(self, message: Outbound) -> None:
        """Edit the decided escalation's card in place: the card posted here, else the one the
        outbox recorded as sent (a restart in between). Idempotent, so a row handed again only
        draws the same card again. A card nowhere to be found is left as it is."""
        assert message.card is not None
        ref = message.card.ref
        if ref is None or not ref.isdigit():
            return
        posted = self.poster.cards.pop(int(ref), None) or await self._engine_card(ref)
        if posted is None:
            log.info("discord: card of escalation %s not found; left as it is", ref)
            return
        await self.poster.show_decided(message, posted)

    async def _engine_card(self, escalation: str) -> str | None:
        engine = self._engine
        return await engine.question_message(escalation) if engine is not None else None

    async def mode(self, channel_id: str) -> str:
        """How roles speak in a channel: "webhooks" or "embeds" (doctor, tests)."""
        return await self.poster.mode(channel_id)


NOT_SET_UP = (
    "Tribunal is not set up in #{name}, so nothing happened. An operator adds it as a group in "
    'tribunal.toml (`[groups.<name>]` with `platform = "discord"` and `channel = "{channel}"`) '
    "and restarts the bot; then mention me there to start a task."
)
TOKEN_REFUSED = (
    "settings: discord: Discord refused DISCORD_BOT_TOKEN; reset it in the developer portal "
    "(Bot → Reset Token), set it again, check with `tribunal doctor`"
)
INTENT_REFUSED = (
    "settings: discord: turn on Message Content Intent (developer portal → Bot → Privileged "
    "Gateway Intents): Discord refused it"
)
SHARD_REFUSED = (
    "settings: discord: Discord refused shard {shard} (close code 4010, invalid shard): "
    "discord.shard_ids must lie below discord.shard_count, and shard_count be the same in every "
    "process"
)
MORE_SHARDS = (
    "settings: discord: Discord asks for more shards (close code 4011, sharding required): "
    "raise discord.shard_count in every process, and give each its shard_ids"
)
_AUTHENTICATION_FAILED = 4004  # Gateway close code: the token is not (or no longer) valid
_INVALID_SHARD = 4010
_SHARDING_REQUIRED = 4011


def _raise_ended(gateway: asyncio.Task[None]) -> None:
    """Raise what ended the Gateway task: a settings error a person can act on where it is one."""
    if gateway.cancelled():
        raise ConnectionError("discord: the Gateway connection was cancelled")
    exc = gateway.exception()
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        raise SettingsError([INTENT_REFUSED]) from None
    if isinstance(exc, discord.ConnectionClosed) and exc.code == _AUTHENTICATION_FAILED:
        raise SettingsError([TOKEN_REFUSED]) from None
    if isinstance(exc, discord.ConnectionClosed) and exc.code == _INVALID_SHARD:
        raise SettingsError([SHARD_REFUSED.format(shard=exc.shard_id)]) from None
    if isinstance(exc, discord.ConnectionClosed) and exc.code == _SHARDING_REQUIRED:
        raise SettingsError([MORE_SHARDS]) from None
    if exc is not None:
        raise exc
