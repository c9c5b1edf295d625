"""The seam between the engine and a chat platform (DESIGN §7).

An `Adapter` is one platform: it turns the platform's events into `rooms.base.model.Inbound` and
hands them to `Engine.handle`, and it renders each `rooms.base.model.Outbound` the engine delivers
(text, persona, buttons, the structured `Card`, edits in place). `Router` is the engine's single
`rooms.base.ports.Platform`: it passes each outbound message to the adapter of its room's
platform, so one process can serve the console, Slack and Discord on one engine and store.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rooms.base.model import Outbound, RoomRef

if TYPE_CHECKING:
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


@runtime_checkable
class Alive(Protocol):
    """An adapter that can tell whether its platform connection is up (/healthz). Optional:
    one that cannot (the console) counts as up while it runs."""

    def alive(self) -> bool: ...


@runtime_checkable
class HttpHost(Protocol):
    """An adapter with an HTTP listener of its own (Slack in HTTP mode, on TRIBUNAL_HTTP_PORT)
    that can serve others' routes beside its own: `mount` before the adapter starts."""

    def serves_http(self, port: int) -> bool: ...

    def mount(self, attach: Callable[[Any], None]) -> None: ...


@runtime_checkable
class ThreadLinks(Protocol):
    """An adapter that can name the web address of a room's thread (the dashboard links to it);
    None when it cannot tell."""

    def thread_link(self, room: RoomRef) -> str | None: ...


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
        # Told of every message delivered (the dashboard keeps each room's progress line):
        # called after the adapter took it, must not raise or block.
        self.watchers: list[Callable[[Outbound], None]] = []
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
        delivered = await adapter.deliver(message)
        for watcher in self.watchers:
            watcher(message)
        return delivered


# -- the registry ---------------------------------------------------------------------------------
# Each platform package declares itself when it is imported (`bot/platforms.py` imports them all):
# a `PlatformSpec` names its adapter factory, the settings it reads (and which of them are
# secrets), its doctor checks and its app manifest. bot/settings.py builds the platform's section
# and variables from it, and the secrets are kept out of every runner (bot/backend.py hands them
# to container/) and refused as a reference model's key (bot/settings_references.py).
#
# The package's `__init__` holds only the declaration: its factory and doctor checks are named
# as "module:function" and loaded when used, so that the settings can read every declaration
# before any adapter (which needs the settings) is imported.

# Given the settings (bot.settings.Settings), the adapter, or None when the platform is not
# configured (no token). `tribunal serve` starts every adapter whose factory returns one.
AdapterFactory = Callable[[Any], "Adapter | None"]


@dataclass(frozen=True)
class PlatformSetting:
    """One setting of a platform: `key` in its `[<platform>]` section of tribunal.toml (the
    field `<platform>_<key>` of the settings), read from the environment variable `variable`
    too. A `secret` is never shown, never handed to a runner, never a reference model's key.
    `value`: the type of its value (a string unless said; `list[int]` is read from a TOML list
    or from the variable as JSON, `[0, 2]`); its platform's own code reads it with
    `Settings.platform_setting`."""

    key: str
    variable: str
    secret: bool = False
    value: Any = str


@dataclass(frozen=True)
class PlatformSpec:
    """A chat platform as the rest of the bot sees it.

    `factory`: the adapter factory, or "module:function" naming it. `token`: the key of the
    setting that, set, means the platform is configured. `doctor`: "module:function" of its
    `tribunal doctor` checks (Settings -> Check…), and `status` of its line in the platforms'
    check (Settings -> (what is configured, what is missing)), both optional. `manifest`: the
    file people create the platform's app from, if it has one. `title`: its name in prose.
    `approver`: the pattern a person's id (or group's) has in its inbound events, and how to
    say it, so that an approver no event can carry is refused when the settings load
    (bot/settings_approvers.py); None: any id is taken as written. `check`: "module:function"
    of what is wrong with its settings taken together (Settings -> list of lines), run when
    the settings load, so a bad combination stops the start with the others' errors."""

    name: str
    factory: AdapterFactory | str
    settings: tuple[PlatformSetting, ...] = ()
    token: str | None = None
    doctor: str | None = None
    status: str | None = None
    manifest: str | None = None
    title: str = ""
    approver: tuple[str, str] | None = None
    check: str | None = None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The environment variables of its secrets."""
        return tuple(s.variable for s in self.settings if s.secret)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(s.variable for s in self.settings)

    def field(self, key: str) -> str:
        """The settings field of one of its keys: `slack_bot_token`."""
        return f"{self.name}_{key}"

    def token_variable(self) -> str | None:
        return next((s.variable for s in self.settings if s.key == self.token), None)


_SPECS: dict[str, PlatformSpec] = {}
_ALL_DECLARED = False


def register(platform: str | PlatformSpec, factory: AdapterFactory | None = None) -> None:
    """Declare a platform: its `PlatformSpec`, or (tests) a name and a factory alone."""
    if isinstance(platform, str):
        if factory is None:
            raise ValueError(f"platform {platform!r}: a factory is needed")
        platform = PlatformSpec(platform, factory)
    current = _SPECS.get(platform.name)
    if current is not None and current.factory is not platform.factory:
        raise ValueError(f"platform {platform.name!r} registered twice")
    _SPECS[platform.name] = platform


def unregister(name: str) -> None:
    """Forget a platform (tests that declare one of their own)."""
    _SPECS.pop(name, None)


def all_declared() -> None:
    """Said by bot/platforms.py once it has imported every platform package."""
    global _ALL_DECLARED
    _ALL_DECLARED = True


def platforms_declared() -> bool:
    """Whether bot/platforms.py has run: until then the settings cannot know the platforms'."""
    return _ALL_DECLARED


def platform_specs() -> list[PlatformSpec]:
    """Every declared platform, in the order they were declared (import bot.platforms first)."""
    return list(_SPECS.values())


def platform_secrets() -> frozenset[str]:
    """Every declared platform's secret variables: never for a runner, never a model key."""
    return frozenset(name for spec in _SPECS.values() for name in spec.secrets)


def load(reference: str) -> Any:
    """The object a "module:function" reference names, its module imported now."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


def registered() -> dict[str, AdapterFactory]:
    """The factories declared so far, by platform name (import bot.platforms first). A factory
    whose module cannot be imported (its SDK is not installed in this build) is left out:
    `tribunal serve` names such a platform when its token is set (bot/serve.py)."""
    factories: dict[str, AdapterFactory] = {}
    for spec in _SPECS.values():
        try:
            factories[spec.name] = (
                load(spec.factory) if isinstance(spec.factory, str) else spec.factory
            )
        except ModuleNotFoundError:
            continue
    return factories
