"""A recording `Platform` (rooms.base.ports.Platform) for engine tests.

Every `deliver` call is recorded as an attempt. A new message gets an id `m1`, `m2`, …; an edit
(`edit_of`) changes the recorded message in place. Like a careful real adapter it is idempotent
by `outbox_id`: a message handed again with an outbox id it has already posted is not posted
again (the attempt is still recorded, so tests can see the redelivery). `fail_next` makes the
next N deliveries raise, `fail_when` fails the ones a predicate picks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from rooms.base.model import Outbound, RoomRef


class PlatformDown(RuntimeError):
    pass


@dataclass
class Posted:
    id: str
    message: Outbound
    edits: list[str] = field(default_factory=list)  # texts of later edits, in order

    @property
    def text(self) -> str:
        return self.edits[-1] if self.edits else self.message.text


class RecordingPlatform:
    def __init__(self) -> None:
        self.attempts: list[Outbound] = []
        self.posts: list[Posted] = []
        self.fail_next = 0
        self.fail_when: Callable[[Outbound], bool] | None = None
        self._by_outbox: dict[int, Posted] = {}
        self._by_id: dict[str, Posted] = {}
        self._changed = asyncio.Condition()

    async def deliver(self, message: Outbound) -> str | None:
        self.attempts.append(message)
        if self.fail_next > 0:
            self.fail_next -= 1
            raise PlatformDown("the platform is down (scripted)")
        if self.fail_when is not None and self.fail_when(message):
            raise PlatformDown("the platform refused this message (scripted)")
        if message.edit_of is not None:
            posted = self._by_id[message.edit_of]
            posted.edits.append(message.text)
            await self._notify()
            return posted.id
        if message.outbox_id and message.outbox_id in self._by_outbox:
            return self._by_outbox[message.outbox_id].id
        posted = Posted(f"m{len(self.posts) + 1}", message)
        self.posts.append(posted)
        self._by_id[posted.id] = posted
        if message.outbox_id:
            self._by_outbox[message.outbox_id] = posted
        await self._notify()
        return posted.id

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- what tests look at -----------------------------------------------------------------

    def messages(self, room: RoomRef | None = None, persona: str | None = None) -> list[Posted]:
        """Posts (not counting progress messages) in the order they were posted."""
        return [
            p
            for p in self.posts
            if p.message.outbox_id
            and (room is None or p.message.room == room)
            and (persona is None or p.message.persona == persona)
        ]

    def texts(self, room: RoomRef | None = None, persona: str | None = None) -> list[str]:
        return [p.text for p in self.messages(room, persona)]

    def progress(self) -> list[Posted]:
        """Messages posted directly (progress), not through the outbox."""
        return [p for p in self.posts if not p.message.outbox_id]

    def redeliveries(self) -> list[Outbound]:
        """Attempts that handed an outbox id a second time."""
        seen: set[int] = set()
        again: list[Outbound] = []
        for m in self.attempts:
            if not m.outbox_id or m.edit_of:
                continue
            if m.outbox_id in seen:
                again.append(m)
            seen.add(m.outbox_id)
        return again

    def last_actions(self) -> Posted | None:
        """The latest message that carries buttons (an escalation)."""
        return next((p for p in reversed(self.posts) if p.message.actions), None)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(predicate)


class RecordingAdapter(RecordingPlatform):
    """A `RecordingPlatform` that is also a `bot.adapter.Adapter` for one platform name: it
    records its lifecycle (`started`, `stopped`) into `log`, which several adapters may share, so
    tests can check the order of starts and stops against the engine's."""

    def __init__(self, platform: str = "console", log: list[str] | None = None) -> None:
        super().__init__()
        self._platform = platform
        self.log: list[str] = log if log is not None else []
        self.engine: object | None = None

    @property
    def platform(self) -> str:
        return self._platform

    async def start(self, engine: object) -> None:
        self.engine = engine
        self.log.append(f"start {self._platform}")

    async def stop(self) -> None:
        self.log.append(f"stop {self._platform}")
