"""Stored records other than tasks and turns, and the drafts the engine hands the store.

`Change` is the one composite write of the store: everything one step of the engine changes
(a finished turn, its usage, a detector firing, a verdict, a human message, an answered or new
escalation, outbox messages, the task's transition and counters) is applied in one transaction,
all or nothing, guarded by compare-and-swap on the task's version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rooms.base.model import Action, Card, Firing, RoomRef, Ruling, Summon


@dataclass(frozen=True)
class OutboxDraft:
    """A message to post; `key` makes enqueueing idempotent (the same key is stored once)."""

    key: str
    room: RoomRef
    text: str
    persona: str = "tribunal"
    actions: tuple[Action, ...] = ()
    card: Card | None = None
    private_to: str | None = None
    in_reply_to: str | None = None


@dataclass(frozen=True)
class OutboxRow:
    id: int
    key: str
    task_id: int | None
    room: RoomRef
    text: str
    persona: str
    actions: tuple[Action, ...]
    status: Literal["pending", "sent", "dead"]
    message_id: str | None
    attempts: int
    last_error: str | None
    next_try_at: float = 0.0
    claimed_by: str | None = None
    claimed_until: float | None = None
    card: Card | None = None
    private_to: str | None = None
    in_reply_to: str | None = None


@dataclass(frozen=True)
class Message:
    """A human message on a task. `before_seq`: the seq of the first turn that can see it."""

    id: int
    task_id: int
    user: str
    text: str
    kind: Literal["message", "answer"]
    before_seq: int
    at: float


@dataclass(frozen=True)
class Escalation:
    id: int
    task_id: int
    kind: str  # ruling, ceiling, failure, arbitration_cap, repeat
    question: str
    options: tuple[str, ...]
    reason: str
    status: Literal["open", "answered", "closed"]
    answer: str | None
    answered_by: str | None
    created_at: float
    answered_at: float | None = None


@dataclass(frozen=True)
class FiringRow:
    id: int
    task_id: int
    turn_id: int | None
    firing: Firing
    acted: bool
    at: float


@dataclass(frozen=True)
class VerdictRow:
    id: int
    task_id: int
    turn_id: int
    turn_seq: int
    firing_id: int | None
    ruling: Ruling
    record_path: str | None
    at: float
    panel_id: int | None = None
    tally: dict[str, Any] | None = None
    fairness: dict[str, Any] | None = None


@dataclass(frozen=True)
class WorktreeRecord:
    """The worktree and branch this bot made for a task (rooms/work/worktrees.py): the only branch
    the task ever resumes."""

    task_id: int
    name: str  # the folder under <data>/worktrees, and the branch's name after `tribunal/`
    wanted: str  # the name the task would have had; another `name` when that one was taken
    branch: str
    base: str  # the commit the branch was made at: where the task started
    repository: str  # the repository's common git dir
    created_at: float


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class TurnEnd:
    """How a running turn ended."""

    turn_id: int
    status: Literal["done", "failed", "interrupted"]
    ended_at: float
    output: str = ""
    structured: dict[str, Any] | None = None
    marker: str | None = None
    unmarked: bool = False
    marker_source: str | None = None  # "object" / "text" (rooms/judge/turn_objects.py)
    marker_doubt: str | None = None  # why the marker is not the turn's own first one (ditto)
    error_code: str | None = None
    error: str | None = None
    tree: str | None = None
    session_id: str | None = None
    usage: Usage = Usage()


@dataclass(frozen=True)
class FiringDraft:
    firing: Firing
    turn_id: int | None
    acted: bool = True
    # What finding it cost (the progress judge's model call): added to the task's tokens and
    # cost in the same transaction, so it counts toward the budgets as a reference fan-out does.
    tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class VerdictDraft:
    turn_id: int
    ruling: Ruling
    record_path: str | None
    firing_id: int | None
    panel_id: int | None = None  # the reference opinions the ruling read (rooms/references)
    tally: dict[str, Any] | None = None  # their verdicts, counted (Tally.to_json)
    fairness: dict[str, Any] | None = None  # how the sides were seated, the swap check, models


@dataclass(frozen=True)
class MessageDraft:
    user: str
    text: str
    kind: Literal["message", "answer"] = "message"
    event_id: str | None = None


@dataclass(frozen=True)
class EscalationDraft:
    kind: str
    question: str
    options: tuple[str, ...]
    reason: str
    # The announcement needs the new escalation's id (its buttons carry it), so it is rendered
    # inside the transaction once the id is known.
    post: Callable[[int], OutboxDraft]


@dataclass(frozen=True)
class AnswerDraft:
    escalation_id: int
    answer: str
    user: str


@dataclass
class Change:
    """Everything one step changes, applied atomically by `Store.apply`.

    expect_version: compare-and-swap guard (None: no guard, only for changes that leave the status
    and version alone, e.g. storing a human message). expect_lease: the engine id that must hold
    the task's lease (turn results only). event: the transition event of the task's protocol
    table; status: the status it leads to, as the protocol decided it (the store checks it
    against the table; a person's event, e.g. stop, may leave it to the table).
    """

    task_id: int
    now: float
    expect_version: int | None = None
    expect_lease: str | None = None
    event: str | None = None
    status: str | None = None
    event_id: str | None = None  # inbound event recorded in the same transaction (de-dupe)
    turn: TurnEnd | None = None
    firing: FiringDraft | None = None
    verdict: VerdictDraft | None = None
    message: MessageDraft | None = None
    answer: AnswerDraft | None = None
    escalation: EscalationDraft | None = None
    outbox: list[OutboxDraft] = field(default_factory=list)
    rounds: Literal["reset", "inc"] | None = None
    count_arbitration: bool = False
    failures: Literal["reset", "inc"] | None = None
    grant: bool = False  # an approver raised the ceilings once more
    # A person's `arbitrate` request, stored without a version bump (the running turn goes on);
    # lost (None from apply) when one is pending already.
    summon: Summon | None = None
    take_summon: bool = False  # the pending summon is acted on here (e.g. past the cap)
    approved_tree: str | None = None  # set: the git tree the reviewer approved (snapshots)
    # Set: the change was decided on the task's messages up to this id and on `seen_summon` as
    # its pending `arbitrate` (what the driver knew after the run). A message written since, or
    # another pending summon, makes it stale: nothing is written and the store returns what the
    # decision missed (rooms/store/apply.py `Stale`), in the same round trip.
    seen_message: int | None = None
    seen_summon: Summon | None = None
