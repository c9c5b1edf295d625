"""A protocol's state machine as data (DESIGN §3, §9): statuses, who acts in each, and the table
of transitions. Every protocol has one; the store checks each status change against it.

Two statuses and four events are shared by every protocol (their words are rooms/base/words.py's),
because the parts of the engine that are not a protocol's own rely on them: `closed` ends a task
(a room has at most one task that is not closed, and a new human message opens a new task), and
`waiting_human` is where a task waits for a person to answer an escalation (commands and buttons
answer it with `answer`, `approve` or `reject`; `stop` closes a task from any open status).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rooms.base.words import CLOSED, STOP


class IllegalTransition(ValueError):
    def __init__(self, status: str, event: str, protocol: str = "") -> None:
        where = f" in protocol {protocol!r}" if protocol else ""
        super().__init__(f"no transition from {status!r} on {event!r}{where}")
        self.status = status
        self.event = event


class UnknownStatus(ValueError):
    pass


@dataclass(frozen=True)
class StateTable:
    """`transitions[status][event]` is the status the event leads to; `actors[status]` the role
    that acts in it (None: nobody runs, e.g. a person must answer, or the task is closed)."""

    protocol: str
    initial: str
    transitions: Mapping[str, Mapping[str, str]]
    actors: Mapping[str, str | None]

    def __post_init__(self) -> None:
        statuses = set(self.transitions)
        problems = []
        if set(self.actors) != statuses:
            problems.append("actors and transitions name different statuses")
        if CLOSED not in statuses or self.transitions[CLOSED]:
            problems.append(f"{CLOSED!r} must be a status that leads nowhere")
        if self.initial not in statuses or self.initial == CLOSED:
            problems.append(f"the initial status {self.initial!r} must be an open status")
        for status, moves in self.transitions.items():
            if status != CLOSED and moves.get(STOP) != CLOSED:
                problems.append(f"{status!r} must close on {STOP!r}")
            problems += [
                f"{status!r} on {event!r} leads to an unknown status {target!r}"
                for event, target in moves.items()
                if target not in statuses
            ]
        if problems:
            raise ValueError(f"state table of {self.protocol!r}: " + "; ".join(problems))

    @property
    def statuses(self) -> tuple[str, ...]:
        return tuple(self.transitions)

    @property
    def open_statuses(self) -> tuple[str, ...]:
        return tuple(s for s in self.transitions if s != CLOSED)

    def next(self, status: str, event: str) -> str:
        """Where `event` leads from `status`; IllegalTransition when the table has no such move."""
        try:
            return self.transitions[status][event]
        except KeyError:
            raise IllegalTransition(status, event, self.protocol) from None

    def actor(self, status: str) -> str | None:
        try:
            return self.actors[status]
        except KeyError:
            raise UnknownStatus(f"{status!r} is not a status of {self.protocol!r}") from None


# The kind of task that any text but a command word opens: the owner/reviewer pair (rooms/pair/).
DEFAULT_PROTOCOL = "pair"


class UnknownProtocol(LookupError):
    pass


# The state table of every registered protocol, by the protocol's name. The store checks each
# move of a task against its protocol's table; the protocol registry (rooms/core/registry.py)
# keeps this in step with itself, so that the store knows no protocol and no registry.
_TABLES: dict[str, StateTable] = {}


def keep_table(protocol: str, table: StateTable) -> None:
    _TABLES[protocol] = table


def forget_table(protocol: str) -> None:
    _TABLES.pop(protocol, None)


def registered_table(protocol: str) -> StateTable:
    """The state table of a registered protocol; UnknownProtocol when none is registered."""
    try:
        return _TABLES[protocol]
    except KeyError:
        raise UnknownProtocol(f"no protocol {protocol!r} is registered") from None
