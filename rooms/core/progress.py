"""One progress message per turn, edited in place as the agent works (DESIGN §7).

Delivered straight to the platform, not through the outbox: progress is ephemeral, so losing an
edit costs nothing, while queueing every edit behind the outbox would only delay the real posts.
Best effort: a platform error never fails a turn. Edits are throttled so a chatty agent does not
run into the platform's rate limits, except the first one after a wait: a turn the backend
queued (no runner slot free, a `queued` event) shows why it waits, and stops showing it as soon
as it starts.
"""

from __future__ import annotations

import logging
import time

from rooms.base.model import Outbound, RoomRef
from rooms.base.ports import Platform

log = logging.getLogger(__name__)
MIN_EDIT_INTERVAL_S = 1.0
_LINE_LIMIT = 300


class Progress:
    def __init__(self, platform: Platform, room: RoomRef, role: str, seq: int) -> None:
        self._platform = platform
        self._room = room
        self._role = role
        self._seq = seq
        self._message_id: str | None = None
        self._failed = False
        self._last_at = 0.0
        self._last_text = ""
        self._queued = False  # the message says the turn waits: the next update replaces it
        self.steps = 0

    async def queued(self, line: str) -> None:
        """The turn waits to start (the backend's `queued` event); not a step of its own."""
        self._queued = True
        await self._send(f"⏳ {self._role} is waiting (turn {self._seq}): {_one_line(line)}")

    async def update(self, line: str) -> None:
        self.steps += 1
        text = f"⏳ {self._role} is working (turn {self._seq}): {_one_line(line)}"
        throttled = time.monotonic() - self._last_at < MIN_EDIT_INTERVAL_S
        if throttled and self._message_id and not self._queued:
            return
        self._queued = False
        await self._send(text)

    async def finish(self, outcome: str) -> None:
        if self._message_id is None:
            return  # no progress was shown: nothing to close
        await self._send(f"{self._role} {outcome} (turn {self._seq}, {self.steps} steps)")

    async def _send(self, text: str) -> None:
        if self._failed or text == self._last_text:
            return
        self._last_at = time.monotonic()
        self._last_text = text
        message = Outbound(self._room, text, persona=self._role, edit_of=self._message_id)
        try:
            delivered = await self._platform.deliver(message)
        except Exception as exc:  # best effort: progress must never fail a turn
            log.warning("progress update in %s failed: %s", self._room.key, exc)
            self._failed = True
            return
        if self._message_id is None:
            self._message_id = delivered
            # A platform that returns no id cannot edit: stop rather than post a new line each time.
            self._failed = delivered is None


def _one_line(line: str) -> str:
    return " ".join(line.split())[:_LINE_LIMIT]
