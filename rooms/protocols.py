"""The protocols the engine knows, by name (DESIGN §9). A task records the name of its protocol;
the driver, the store and the commands look it up here.

The owner/reviewer pair is built in and is the default kind of task. Another protocol (arena,
debate, resolve: each a folder under rooms/) is registered with `register`, by its package or, in
tests, by the test itself.
"""

from __future__ import annotations

from rooms.machine import StateTable
from rooms.pair.protocol import PAIR
from rooms.protocol import Protocol

DEFAULT = PAIR.name

_REGISTRY: dict[str, Protocol] = {PAIR.name: PAIR}


class UnknownProtocol(LookupError):
    pass


def register(protocol: Protocol) -> Protocol:
    """Make `protocol` known by its name (and its command word, if it has one)."""
    current = _REGISTRY.get(protocol.name)
    if current is not None and current is not protocol:
        raise ValueError(f"another protocol is already registered as {protocol.name!r}")
    word = protocol.command
    if word is not None and any(
        p.command == word and p is not protocol for p in _REGISTRY.values()
    ):
        raise ValueError(f"another protocol already opens with {word!r}")
    _REGISTRY[protocol.name] = protocol
    return protocol


def unregister(name: str) -> None:
    """Forget a protocol (tests that register one of their own). The pair stays."""
    if name != DEFAULT:
        _REGISTRY.pop(name, None)


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
