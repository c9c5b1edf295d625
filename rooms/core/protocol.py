"""What a protocol is to the driver (DESIGN §9): its state table, and three questions per step.

The generic driver (rooms.core.driver) owns the lease, the loop, the turn's record and its run; for
everything a protocol decides it asks the task's protocol:

- `table.actor(status)`: who acts now (None: nobody; the driver stops until something changes);
- `begin(step)`: how the next turn starts (its role, the session it resumes, what it records);
- `spec(step, turn)`: the run spec for that turn (prompt, system prompt, schema, limits);
- `decide(step, turn, run)`: the `Change` the outcome makes, with the event and the target status
  already decided from the protocol's table (the store only checks the version and that the
  move is in the table).

Each step reads the task (with its counters), the room, the policy and the history once, and
carries them in one `Step`; `decide` gets it as it is after the run (`Step.after`). People may
write while the agent works: the store writes a decision only when it saw all they wrote, else
it returns what came and the driver calls `decide` again with it (rooms/store/steps.py), so a
`decide` may run more than once for one turn and must not act outside its `Change` (reads and
judgments only), unless the protocol's optional `decides_once(step, turn)` says so for that
turn: then the driver reads what people did first, and decides once.

A protocol is registered by name (rooms.core.registry) and lives in a folder of its own
(`rooms/pair/` is the first), so a new one adds files and changes neither the driver nor the
store. A phase that runs several actors at once would return several `TurnStart`s from a
`begin_all` and get every outcome in one `decide_all`; the store's turn rows (seq per task) and
the single lease already allow it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol as Interface

from rooms.base.machine import StateTable
from rooms.base.model import GroupPolicy, RoomRef, Task, Thresholds, Turn
from rooms.base.records import Change, Message
from rooms.core.turns import RunOutcome
from rooms.judge.history import History
from rooms.references.arbitration import PanelStore
from rooms.references.port import Reference
from runners.protocol import RunSpec


@dataclass(frozen=True)
class Step:
    """Everything one step of one task knows, read once from the store."""

    task: Task  # with its counters (failures, grants) and its protocol
    room: RoomRef
    policy: GroupPolicy
    history: History
    limits: Thresholds  # the group's thresholds, raised by the ceilings people granted
    now: float
    owner: str  # the engine id that holds the task's lease
    data_dir: str | None = None  # where decision records are written (None: nowhere)
    # Reference opinions (rooms/references): the group's references and where panels are kept.
    references: Sequence[Reference] = ()
    panels: PanelStore | None = None

    def after(self, turn: Turn, messages: list[Message], now: float) -> Step:
        """This step once `turn` (as it began) has run: the history with the turn in it and the
        human messages as they are now, at time `now`. Nothing else of the history can change
        while we hold the lease: only people write to a task we drive."""
        h = self.history
        turns = [*(t for t in h.turns if t.id != turn.id), turn]
        history = History(turns, messages, h.verdicts, h.firings, h.waited_s)
        return replace(self, history=history, now=now)


@dataclass(frozen=True)
class TurnStart:
    """How the next turn begins: who acts, the session it resumes, the workspace it starts from
    (recorded on the turn, e.g. the tree the reviewer approved before a wrap-up)."""

    role: str
    resume: str | None = None
    tree_before: str | None = None


class Protocol(Interface):
    """One kind of task. `name` is stored on each task; `command` is the word after the mention
    that opens a task of this kind (None: the default kind, opened by any other text)."""

    @property
    def name(self) -> str: ...

    @property
    def table(self) -> StateTable: ...

    @property
    def command(self) -> str | None: ...

    def opened_text(self, user: str, policy: GroupPolicy) -> str:
        """The acknowledgement posted when a task of this kind opens (`policy.how_to` says how a
        person addresses Tribunal in this group's rooms)."""
        ...

    def label(self, status: str) -> str:
        """How `status` reads in the room's status line."""
        ...

    async def begin(self, step: Step) -> TurnStart: ...

    async def spec(self, step: Step, turn: Turn) -> RunSpec: ...

    async def decide(self, step: Step, turn: Turn, run: RunOutcome) -> Change: ...


def decided(table: StateTable, task: Task, change: Change) -> Change:
    """`change` with its target status read from `table`; a change without an event keeps the
    status. IllegalTransition when the table has no such move (a bug in the protocol)."""
    if change.event is not None:
        change.status = table.next(task.status, change.event)
    return change
