"""Outbound to Slack: every post, piece, file and ephemeral reply of one `Outbound`, at most once.

Delivery is at-least-once (the outbox hands a row again when its mark was lost), so each post
carries the outbox row's id in Slack's message metadata (`tribunal_post`: outbox id, piece
number, escalation id). A row handed again in this process is known from memory; a row handed
again after a restart (`Outbound.attempt` > 1) is first looked up in its thread
(`conversations.replies` with the metadata), and only what is missing is posted: the pieces not
yet there, the file if no file of that row is. This survives a SIGKILL between a post and its
mark, because what Slack already holds is the record.

Ephemeral replies cannot be looked up (Slack keeps no copy anyone can read back); a refusal
shown twice after a crash is the one repeat left, and a harmless one.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.render import escalation_id
from bot.slack.blocks import persona, pieces, post_args, text_parts
from bot.slack.text import to_mrkdwn
from rooms.base.model import Outbound

log = logging.getLogger(__name__)
METADATA_EVENT = "tribunal_post"
_REMEMBERED = 10_000  # outbox ids whose delivery this process remembers
_LOOKUP_PAGES = 20  # pages of 200 replies read back when looking for an earlier post


@dataclass
class Partial:
    """How far the posts of one outbox row got: piece number → ts, and whether the file went."""

    posted: dict[int, str] = field(default_factory=dict)
    filed: bool = False

    @property
    def head(self) -> str | None:
        return self.posted.get(0)


def file_name(message: Outbound) -> str:
    return f"{message.persona}-{message.outbox_id or 'message'}.md"


class Poster:
    def __init__(self, client: AsyncWebClient, on_posted: Callable[[str, str], None]) -> None:
        self.client = client
        self._on_posted = on_posted  # (channel, ts): the edit pacer learns of each new message
        self._delivered: OrderedDict[int, str | None] = OrderedDict()
        self._partial: dict[int, Partial] = {}
        self.cards: dict[int, str] = {}  # escalation id → ts of its card, as posted here
        self.lookups = 0  # thread read-backs made (tests: a first delivery makes none)
        # Our bot's user and bot ids (auth.test): only our own messages count when reading back,
        # so another app cannot stop a post by faking our metadata in the thread.
        self.own: frozenset[str] = frozenset()

    def known(self, outbox_id: int) -> tuple[bool, str | None]:
        if outbox_id and outbox_id in self._delivered:
            return True, self._delivered[outbox_id]
        return False, None

    def remember(self, outbox_id: int, delivered: str | None) -> None:
        if not outbox_id:
            return
        self._partial.pop(outbox_id, None)
        self._delivered[outbox_id] = delivered
        while len(self._delivered) > _REMEMBERED:
            self._delivered.popitem(last=False)

    # -- posts -----------------------------------------------------------------------------------

    async def post(self, message: Outbound) -> str:
        partial = await self._progress_of(message)
        ts = await self._post_parts(message, partial)
        escalation = escalation_id(message.actions)
        if escalation is not None and escalation.isdigit():
            self.cards[int(escalation)] = ts
        return ts

    async def _progress_of(self, message: Outbound) -> Partial:
        if not message.outbox_id:
            return Partial()
        partial = self._partial.get(message.outbox_id)
        if partial is None:
            partial = Partial()
            if message.attempt > 1:  # an earlier process may have posted some of it
                partial = await self._look_up(message)
            self._partial[message.outbox_id] = partial
        return partial

    async def _post_parts(self, message: Outbound, partial: Partial) -> str:
        if message.card is not None:
            if partial.head is None:
                partial.posted[0] = await self._post_one(message, message.text, 0, last=True)
            assert partial.head is not None
            return partial.head
        parts, as_file = text_parts(message.text)
        if as_file:
            if partial.head is None:
                partial.posted[0] = await self._post_one(message, parts[0], 0, last=True)
            if not partial.filed:
                await self._upload(message)
                partial.filed = True
        else:
            for index, piece in enumerate(parts):
                if index not in partial.posted:
                    last = index == len(parts) - 1
                    partial.posted[index] = await self._post_one(message, piece, index, last=last)
        assert partial.head is not None
        return partial.head

    async def _post_one(self, message: Outbound, piece: str, index: int, *, last: bool) -> str:
        args = post_args(message, piece, last=last)
        if message.outbox_id:
            payload: dict[str, Any] = {"outbox_id": message.outbox_id, "piece": index}
            escalation = escalation_id(message.actions)
            if escalation is not None:
                payload["escalation"] = escalation
            args["metadata"] = {"event_type": METADATA_EVENT, "event_payload": payload}
        response = await self.client.chat_postMessage(**args)
        ts = str(response["ts"])
        self._on_posted(message.room.channel, ts)
        return ts

    async def _upload(self, message: Outbound) -> None:
        await self.client.files_upload_v2(
            channel=message.room.channel,
            thread_ts=message.room.thread,
            content=message.text,
            filename=file_name(message),
            title=f"{persona(message.persona).username}: the whole text",
        )

    async def ephemeral(self, message: Outbound, user: str) -> str | None:
        who = persona(message.persona)
        response = await self.client.chat_postEphemeral(
            channel=message.room.channel,
            user=user,
            thread_ts=message.room.thread,
            text=to_mrkdwn(pieces(message.text)[0]),
            username=who.username,
            icon_emoji=who.icon_emoji,
        )
        ts = response.get("message_ts")
        return None if ts is None else f"ephemeral:{ts}"  # nobody can edit an ephemeral message

    # -- reading back what is already in Slack ---------------------------------------------------

    async def thread_messages(self, channel: str, thread: str) -> list[dict[str, Any]]:
        """The thread as Slack holds it, with metadata (bounded: `_LOOKUP_PAGES` pages)."""
        self.lookups += 1
        messages: list[dict[str, Any]] = []
        mine = self.own
        cursor: str | None = None
        for _ in range(_LOOKUP_PAGES):
            response = await self.client.conversations_replies(
                channel=channel, ts=thread, include_all_metadata=True, limit=200, cursor=cursor
            )
            messages += [
                m
                for m in response.get("messages") or ()
                if isinstance(m, dict) and (not mine or {m.get("bot_id"), m.get("user")} & mine)
            ]
            cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                break
        return messages

    async def _look_up(self, message: Outbound) -> Partial:
        partial = Partial()
        wanted = file_name(message)
        for found in await self.thread_messages(message.room.channel, message.room.thread):
            payload = _payload(found)
            piece = payload.get("piece", 0)
            if (
                payload.get("outbox_id") == message.outbox_id
                and isinstance(found.get("ts"), str)
                and isinstance(piece, int)
            ):
                partial.posted.setdefault(piece, found["ts"])
            names = {f.get("name") for f in found.get("files") or () if isinstance(f, dict)}
            partial.filed = partial.filed or wanted in names
        if partial.posted or partial.filed:
            log.info(
                "slack: outbox row %s was already posted (%s pieces%s); not posting it again",
                message.outbox_id,
                len(partial.posted),
                ", file" if partial.filed else "",
            )
        return partial

    async def card_of(self, channel: str, thread: str, escalation: int) -> str | None:
        """The ts of an escalation's card: posted here, else found in its thread."""
        if escalation in self.cards:
            return self.cards[escalation]
        for found in await self.thread_messages(channel, thread):
            if str(_payload(found).get("escalation")) == str(escalation):
                return str(found["ts"])
        return None


def _payload(message: dict[str, Any]) -> dict[str, Any]:
    metadata = message.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("event_type") != METADATA_EVENT:
        return {}
    payload = metadata.get("event_payload")
    return payload if isinstance(payload, dict) else {}
