"""The protocols the engine knows, by name (DESIGN §9). A task records the name of its protocol;
the driver and the commands look it up here; the store reads only each protocol's state table,
which `register` keeps beside it (rooms/base/machine.py).

This module imports no protocol. The built-in ones (the owner/reviewer pair, the default kind of
task; arena, debate, resolve: each a folder under rooms/) are registered by rooms/__init__.py, one
line each; another is registered with `register` by its package or, in tests, by the test itself.
"""

from __future__ import annotations

import re

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
COMMANDS = ("stop", "status", "approve", "reject", "arbitrate", "help")
# Also taken: the console room's own `/quit` (bot/console/room.py), which it checks after the
# protocols' words; a test there holds every console command to this list.
RESERVED = (*COMMANDS, "quit")
# What rooms.commands.parse can produce from the first word: lower case, no leading "/" and no
# trailing punctuation. A command word of any other form could never be typed.
_WORD = re.compile(r"[a-z][a-z0-9_-]{0,31}")

_REGISTRY: dict[str, Protocol] = {}


def register(protocol: Protocol) -> Protocol:
    """Make `protocol` known by its name (and its command word, if it has one)."""
    current = _REGISTRY.get(protocol.name)
    if current is not None and current is not protocol:
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
        p.command == word and p is not protocol for p in _REGISTRY.values()
    ):
        raise ValueError(f"another protocol already opens with {word!r}")
    _REGISTRY[protocol.name] = protocol
    keep_table(protocol.name, protocol.table)
    return protocol


def unregister(name: str) -> None:
    """Forget a protocol (tests that register one of their own). The pair stays."""
    if name != DEFAULT_PROTOCOL:
        _REGISTRY.pop(name, None)
        forget_table(name)


def protocol_for(name: str) -> Protocol:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownProtocol(f"no protocol {name!r} is registered") from None


def table_for(name: str) -> StateTable:
    return protocol_for(name).table


def by_command(word: str) -> Protocol | None:
    """The protocol that a task opened with `@tribunal <word> …` runs, if any."""
    return next((p for p in _REGISTRY.values() if p.command == word), None)
