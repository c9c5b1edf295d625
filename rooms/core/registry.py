"""The protocols the engine knows, by name (DESIGN §9). A task records the name of its protocol;
the driver and the commands look it up here; the store reads only each protocol's state table,
which `register` keeps beside it (rooms/base/machine.py).

A protocol declares itself in a `ProtocolSpec`: the protocol the driver runs (its name, command
word and state table), its limits model (the group's settings section of the same name, and its
entry in `GroupPolicy.protocol_limits`), the prompt files it loads (which a group may replace),
and what follows its command word in the help. Everything else that lists protocols (settings,
the group policy, the console's and the chat's help, the prompts a group may replace) reads them
here, so a new protocol is its folder and one `register` line.

This module imports no protocol. The built-in ones (the owner/reviewer pair, the default kind of
task; arena, debate, resolve: each a folder under rooms/) are registered by rooms/__init__.py, one
line each; another is registered with `register` by its package or, in tests, by the test itself.
Register before the settings are read: bot/settings_sections.py builds a group's sections from
the protocols registered when it is imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rooms.base.machine import (
    DEFAULT_PROTOCOL,
    StateTable,
    UnknownProtocol,
    forget_table,
    keep_table,
)
from rooms.core.protocol import Protocol

# The words after the mention that Tribunal answers itself (rooms.commands reads them first).
# They are defined here, beside the registry, because a protocol opened by one of them would be
# shadowed (`@tribunal status …` never opens a task) or, in the console, would shadow the
# command: registering such a protocol is refused.
COMMANDS = ("stop", "status", "approve", "reject", "choose", "arbitrate", "help", "dashboard")
# Also taken: the console room's own `/quit` (bot/console/room.py), which it checks after the
# protocols' words; a test there holds every console command to this list.
RESERVED = (*COMMANDS, "quit")
# What rooms.commands.parse can produce from the first word: lower case, no leading "/" and no
# trailing punctuation. A command word of any other form could never be typed.
_WORD = re.compile(r"[a-z][a-z0-9_-]{0,31}")


@dataclass(frozen=True)
class ProtocolSpec:
    """A protocol as the rest of Tribunal sees it.

    `limits`: its limits model, a dataclass whose fields have defaults and which checks itself;
    a group sets them in `[groups.<name>.<protocol name>]` (None: nothing to set).
    `prompt_roles`: the prompt files it loads (prompts/<role>.md), which a group may replace.
    `usage`: what follows its command word, as the help shows it ("<decision>").
    `summary`: what opening one does, for the help ("open a debate")."""

    protocol: Protocol
    limits: type | None = None
    prompt_roles: tuple[str, ...] = ()
    usage: str = ""
    summary: str = ""

    @property
    def name(self) -> str:
        return self.protocol.name

    @property
    def command(self) -> str | None:
        return self.protocol.command

    @property
    def opening(self) -> str:
        """How a task of this kind is opened, after the mention: "debate <decision>"."""
        return f"{self.command or ''} {self.usage}".strip()

    @property
    def section(self) -> str:
        """The group's settings section for its limits, and their key in the group policy."""
        return self.protocol.name


_REGISTRY: dict[str, ProtocolSpec] = {}


def register(declared: Protocol | ProtocolSpec) -> Protocol:
    """Make a protocol known by its name (and its command word, if it has one). A bare
    `Protocol` declares nothing else (tests register such)."""
    spec = declared if isinstance(declared, ProtocolSpec) else ProtocolSpec(declared)
    protocol = spec.protocol
    current = _REGISTRY.get(protocol.name)
    if current is not None and current.protocol is not protocol:
        raise ValueError(f"another protocol is already registered as {protocol.name!r}")
    word = protocol.command
    if word is not None and word in RESERVED:
        raise ValueError(
            f"protocol {protocol.name!r} cannot open with {word!r}: it is a built-in command "
            f"(taken: {', '.join(RESERVED)})"
        )
    if word is not None and not _WORD.fullmatch(word):
        raise ValueError(
            f"protocol {protocol.name!r}: the command word {word!r} could never be typed; use "
            "1 to 32 lower-case letters, digits, '_' or '-', starting with a letter"
        )
    if word is not None and any(
        p.command == word and p.protocol is not protocol for p in _REGISTRY.values()
    ):
        raise ValueError(f"another protocol already opens with {word!r}")
    taken = {
        role
        for other in _REGISTRY.values()
        if other.name != spec.name
        for role in other.prompt_roles
    }
    if taken & set(spec.prompt_roles):
        raise ValueError(
            f"protocol {protocol.name!r}: prompt roles {sorted(taken & set(spec.prompt_roles))} "
            "belong to another protocol"
        )
    _REGISTRY[protocol.name] = spec
    keep_table(protocol.name, protocol.table)
    return protocol


def unregister(name: str) -> None:
    """Forget a protocol (tests that register one of their own). The pair stays."""
    if name != DEFAULT_PROTOCOL:
        _REGISTRY.pop(name, None)
        forget_table(name)


def specs() -> list[ProtocolSpec]:
    """Every registered protocol's declaration, in the order they were registered."""
    return list(_REGISTRY.values())


def prompt_roles() -> tuple[str, ...]:
    """Every role whose prompt a group may replace, protocol by protocol."""
    return tuple(role for spec in _REGISTRY.values() for role in spec.prompt_roles)


def protocol_for(name: str) -> Protocol:
    try:
        return _REGISTRY[name].protocol
    except KeyError:
        raise UnknownProtocol(f"no protocol {name!r} is registered") from None


def table_for(name: str) -> StateTable:
    return protocol_for(name).table


def by_command(word: str) -> Protocol | None:
    """The protocol that a task opened with `@tribunal <word> …` runs, if any."""
    return next((p.protocol for p in _REGISTRY.values() if p.command == word), None)
