"""The seam between the engine and a chat platform (DESIGN §7).

An `Adapter` is one platform: it turns the platform's events into `rooms.base.model.Inbound` and
hands them to `Engine.handle`, and it renders each `rooms.base.model.Outbound` the engine delivers
(text, persona, buttons, the structured `Card`, edits in place). `Router` is the engine's single
`rooms.base.ports.Platform`: it passes each outbound message to the adapter of its room's
platform, so one process can serve the console, Slack and Discord on one engine and store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rooms.base.model import Outbound, RoomRef

if TYPE_CHECKING:
    from bot.settings import Settings
    from rooms.engine import Engine


class Adapter(Protocol):
    """One chat platform. `platform` is the `RoomRef.platform` of the rooms it serves."""

    @property
    def platform(self) -> str: ...

    async def start(self, engine: Engine) -> None:
        """Connect and begin handing inbound events to `engine.handle`. Returns once running."""
        ...

    async def stop(self) -> None:
        """Disconnect; idempotent. Called before the engine stops."""
        ...

    async def deliver(self, message: Outbound) -> str | None:
        """Post (or, with `edit_of`, edit) one message; return the platform's id for it.

        Raise to have the outbox retry with backoff. Delivery is at-least-once: the same
        `outbox_id` may come again after a crash."""
        ...


@runtime_checkable
class Finishing(Protocol):
    """An adapter that can end on its own (the console: /quit, end of input). Optional: `serve`
    runs until one such adapter has finished, or, with none, until it is stopped (SIGTERM)."""

    async def finished(self) -> None: ...


def click_failed(ref: str) -> str:
    """The private answer to a click whose handling raised (the error is in the log, with `ref`)."""
    return (
        f"Something went wrong while handling your click, so it may not have counted (it is in "
        f"the bot's log as {ref}). Try again in a moment, or reply `approve` / `reject` in the "
        "thread."
    )


async def task_of(engine: Engine, room: RoomRef) -> str:
    """ "task #N" for the room's open task, for a log line about an event that failed there."""
    try:
        task = await engine.open_task_in(room)
    except Exception:  # the store is what failed, most likely: the line goes out without it
        return "task unknown"
    return f"task #{task.id}" if task is not None else "no open task"


class UnservedPlatform(RuntimeError):
    """An outbound message for a platform no adapter in this process serves."""


class Router:
    """`rooms.base.ports.Platform` over several adapters, chosen by the room's platform."""

    def __init__(self, adapters: Iterable[Adapter] = ()) -> None:
        self._adapters: dict[str, Adapter] = {}
        for adapter in adapters:
            self.add(adapter)

    def add(self, adapter: Adapter) -> None:
        if adapter.platform in self._adapters:
            raise ValueError(f"two adapters for platform {adapter.platform!r}")
        self._adapters[adapter.platform] = adapter

    @property
    def platforms(self) -> frozenset[str]:
        return frozenset(self._adapters)

    def adapters(self) -> list[Adapter]:
        return list(self._adapters.values())

    async def deliver(self, message: Outbound) -> str | None:
        adapter = self._adapters.get(message.room.platform)
        if adapter is None:
            raise UnservedPlatform(f"no adapter serves platform {message.room.platform!r}")
        return await adapter.deliver(message)


# -- the registry ---------------------------------------------------------------------------------
# Each platform module registers a factory when it is imported (`bot/platforms.py` imports them
# all): given the settings, it returns its adapter, or None when the platform is not configured
# (no token). `tribunal serve` starts every adapter whose factory returns one.

AdapterFactory = Callable[["Settings"], "Adapter | None"]
_FACTORIES: dict[str, AdapterFactory] = {}


def register(platform: str, factory: AdapterFactory) -> None:
    if platform in _FACTORIES and _FACTORIES[platform] is not factory:
        raise ValueError(f"platform {platform!r} registered twice")
    _FACTORIES[platform] = factory


def registered() -> dict[str, AdapterFactory]:
    """The factories registered so far, by platform name (import bot.platforms first)."""
    return dict(_FACTORIES)
