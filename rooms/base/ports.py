"""The small protocols through which the tribunal talks to the outside world (DESIGN §1).

`bot/` fills them in: a container or local backend for `Runner`, a Slack/Discord/console adapter
for `Platform`. Tests fill them in with scripted fakes.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Protocol

from rooms.base.model import GroupPolicy, Outbound, RoomRef
from runners.protocol import RunEvent, RunSpec


class Runner(Protocol):
    """Runs one agent turn. Yields events until the turn ends; never raises for a runner's
    failure (that is an `error` event). Cancelling the iteration must stop the agent."""

    def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]: ...


class Platform(Protocol):
    """Delivers one outbound message and returns the platform's id for it (used for edits).

    Delivery is at-least-once: the outbox may hand the same message again after a crash, with
    the same `outbox_id`, and the platform should not post it twice when it can tell."""

    async def deliver(self, message: Outbound) -> str | None: ...


class Policies(Protocol):
    """Which group a room belongs to, and its rules. None: not a registered group; ignore."""

    def for_room(self, room: RoomRef) -> GroupPolicy | None: ...


class SignInLinks(Protocol):
    """The operator's dashboard (bot/dashboard), when it is on: a one-time sign-in link for the
    person who asked in chat, signing them in as that platform identity. None when the room's
    platform cannot hand the link to that person alone (a link shown to the whole channel could be
    used by anyone who clicks it first)."""

    async def link_for(self, room: RoomRef, user: str, roles: frozenset[str]) -> str | None: ...


class Clock(Protocol):
    def now(self) -> float: ...


class WallClock:
    def now(self) -> float:
        return time.time()
