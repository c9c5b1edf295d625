"""The role ids of a server this process does not cache: one on another process's shard (README
"Running at scale"), where the Gateway sends this process nothing. Asked of Discord through
REST (the channel, then its server), and kept a while, so that Tribunal's replies name a role
as a role there too (bot/discord/look.py `named`) instead of as an unknown user."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import Any

import discord

log = logging.getLogger(__name__)
KEEP_S = 600.0  # roles change rarely; a new one is named as a role within ten minutes
_REMEMBERED = 10_000


class RemoteRoles:
    def __init__(self, client: discord.Client) -> None:
        self.client = client
        self._known: OrderedDict[str, tuple[float, frozenset[str]]] = OrderedDict()

    async def of_channel(self, channel_id: str) -> frozenset[str]:
        """The role ids of the channel's server (none when Discord does not say)."""
        known = self._known.get(channel_id)
        if known is not None and time.monotonic() - known[0] < KEEP_S:
            return known[1]
        http = self.client.http
        try:
            data: dict[str, Any] = dict(await http.get_channel(int(channel_id)))
            server = await http.get_guild(int(data["guild_id"]), with_counts=False)
        except (discord.HTTPException, KeyError, TypeError, ValueError) as exc:
            log.info("discord: roles of the server of %s unknown: %s", channel_id, exc)
            return frozenset()
        roles = frozenset(str(r["id"]) for r in server.get("roles") or [])
        self._known[channel_id] = (time.monotonic(), roles)
        while len(self._known) > _REMEMBERED:
            self._known.popitem(last=False)
        return roles
