"""The nouns of the tribunal (DESIGN §2) as they cross the boundary of `rooms/`.

`Inbound` and `Outbound` are what platform adapters hand in and get back; `GroupPolicy` is what
`bot/` derives from settings for one group; `Task`, `Turn` and friends are the stored records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rooms.base.open_caps import OpenCaps
from rooms.base.words import ARBITER, OWNER, REVIEWER, Verdict
from runners.protocol import ModelAgent


@dataclass(frozen=True)
class RoomRef:
    """Where a task lives: a thread under a group's channel."""

    platform: str
    channel: str
    thread: str

    @property
    def key(self) -> str:
        return f"{self.platform}:{self.channel}:{self.thread}"


@dataclass(frozen=True)
class Action:
    """A button: `action` says what it does, `value` which escalation (or option) it is for."""

    action: str
    label: str
    value: str
    style: Literal["primary", "danger", "default"] = "default"


@dataclass(frozen=True)
class Inbound:
    """One event from a platform: a message, or a click on one of our buttons."""

    room: RoomRef
    user: str
    text: str = ""
    event_id: str = ""
    mentions_bot: bool = False
    from_bot: bool = False
    action: str | None = None  # set for a button click: Action.action
    action_value: str | None = None  # Action.value of the clicked button
    # The platform groups the user is in, as the platform reported them (Discord role ids), so
    # an approver may be named by group; never read from the text.
    roles: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Card:
    """The structured form of a ruling, an escalation or a decision, for platforms that draw
    cards (Slack Block Kit, Discord embeds). `Outbound.text` stays the full plain-text version,
    which the console prints and every platform can fall back to.

    kind: "ruling", "escalation", "decided" (an answered escalation) or "summary" (a closed task).
    sections: (heading, body) pairs in display order, e.g. ("Reasons", "…"), ("Question", "…").
    """

    kind: str
    title: str
    sections: tuple[tuple[str, str], ...] = ()
    footer: str = ""
    record_path: str | None = None  # the decision record, for upload or a link
    # What the card is about: for "decided", the escalation id (the value of its buttons) whose
    # card platforms that can edit it update in place with this one.
    ref: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "title": self.title,
            "sections": [list(s) for s in self.sections],
            "footer": self.footer,
            "record_path": self.record_path,
            "ref": self.ref,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Card:
        return cls(
            kind=str(data["kind"]),
            title=str(data["title"]),
            sections=tuple((str(h), str(b)) for h, b in data.get("sections", ())),
            footer=str(data.get("footer", "")),
            record_path=data.get("record_path"),
            ref=data.get("ref"),
        )


@dataclass(frozen=True)
class Outbound:
    """One message for a platform to post (or, with `edit_of`, to edit in place)."""

    room: RoomRef
    text: str
    persona: str = "tribunal"  # owner, reviewer, arbiter, tribunal
    actions: tuple[Action, ...] = ()
    edit_of: str | None = None  # platform message id returned by an earlier delivery
    outbox_id: int = 0
    card: Card | None = None  # the structured view of a ruling / escalation, where there is one
    # A reply meant for one person (a refusal, a stale click): platforms that can show it to
    # that user alone (Slack ephemeral, Discord ephemeral follow-up); others post it normally.
    private_to: str | None = None
    in_reply_to: str | None = None  # the Inbound.event_id this answers (Discord interactions)
    # Which delivery of the outbox row this is: above 1, an earlier one may have reached the
    # platform before the process died, so a platform that can look (Slack) checks first.
    attempt: int = 1
    # With `attempt` > 1: the platform's id of the room's last message delivered before this one
    # (None: none), where a platform that reads its thread back starts looking for this one.
    after: str | None = None
    # An edit that says how a turn ended (a progress message's last): never coalesced away
    # like the edits before it; the platform sends it, in its turn, and raises if it cannot.
    final: bool = False
    # With `final`: the message has done its job (its turn's output follows as a post of its
    # own): a platform that can delete it does; one that cannot shows `text`, as for any edit.
    remove: bool = False


@dataclass(frozen=True)
class AgentConfig:
    agent: ModelAgent = "claude"
    model: str | None = None


@dataclass(frozen=True)
class Thresholds:
    """Deadlock thresholds and ceilings (DESIGN §4). Defaults are the documented ones."""

    stagnation_repeats: int = 2
    repeated_findings_rounds: int = 2
    findings_similarity: float = 0.9
    unchanged_rounds: int = 2
    round_cap: int = 6
    no_progress_rounds: int = 3  # then a progress judge is asked (rooms/judge/no_progress.py)
    max_arbitrations: int = 2
    max_changed_wrapups: int = 2  # wrap-ups that change the approved work, then ask people
    max_turns: int = 60
    max_wall_s: float = 4 * 3600.0
    max_tokens: int = 5_000_000
    max_cost_usd: float = 50.0


L = TypeVar("L")


@dataclass(frozen=True)
class GroupPolicy:
    """Everything the engine needs to know about one group; built by `bot/` from settings."""

    name: str
    workspace: str | None = None
    owner: AgentConfig = AgentConfig()
    reviewer: AgentConfig = AgentConfig()
    arbiter: AgentConfig = AgentConfig()
    # The deliberation protocols' actors (arena's moderator, researchers, experts and
    # synthesizer; debate's sides and referee; resolve's positions, test designer and executor,
    # also when the arbiter asks for a resolve). None: the arbiter's agent and model.
    deliberation: AgentConfig | None = None
    approvers: frozenset[str] = frozenset()
    # Open tasks at once: in the group's channel, and opened by one person there (rooms/open_caps).
    open_caps: OpenCaps = OpenCaps()
    thresholds: Thresholds = Thresholds()
    prompt_overrides: dict[str, str] = field(default_factory=dict)  # role -> file path
    idle_timeout_s: float = 300.0
    hard_timeout_s: float = 1800.0
    max_agent_turns: int = 40  # tool-use turns inside one runner call
    # A new or changed file larger than this is refused from the engine's commit
    # (rooms/work/snapshots.py), with a message in the room.
    max_commit_file_bytes: int = 8 * 1024 * 1024
    recent_turns: int = 6  # turn outputs quoted in each prompt
    # Each protocol's limits by its name (DESIGN §9; rooms.core.registry.ProtocolSpec.limits),
    # as the group set them; a protocol missing here runs with its model's defaults.
    protocol_limits: Mapping[str, object] = field(default_factory=dict)
    # Context that does not grow (rooms/pair/sessions): a session is resumed for at most this
    # many turns and while the outputs it has read stay within session_chars; a fresh prompt
    # quotes the newest turns in full within recent_chars, the older ones one line each.
    session_turns: int = 3
    # 6000: the least input billed with prompt caching over a 12-round task with Claude Code's
    # own ~48K characters per request (tests/bench/bench_context.py); at 3000 no turn with
    # 1,500-character answers ever resumed.
    session_chars: int = 6000
    recent_chars: int = 4000
    # Reference opinions (rooms/references): the whole fan-out's deadline. The references
    # themselves come from the engine's ReferencePool, by group name.
    reference_deadline_s: float = 90.0
    # Ask the arbiter twice, the positions swapped, for a ruling between the sides (on by
    # default: a judge keeps its answer with the order swapped only about two times in three).
    swap_check: bool = True
    allow_same_model: bool = False  # the arbiter may run the owner's or reviewer's model
    # How a person addresses Tribunal in this group's rooms, as the engine's replies say it:
    # "mention me with" in a chat channel, "type" in the console room.
    address: str = "mention me with"

    def how_to(self, what: str) -> str:
        """`"mention me with `status`"` / `"type `status`"`."""
        return f"{self.address} {what}"

    def limits(self, protocol: str, model: type[L]) -> L:
        """The limits of `protocol` for this group: as set, else `model`'s defaults."""
        found = self.protocol_limits.get(protocol)
        if found is None:
            return model()
        if not isinstance(found, model):
            raise TypeError(f"the {protocol!r} limits are a {type(found).__name__}, not {model}")
        return found

    def agent_for(self, role: str) -> AgentConfig:
        """The pair's three roles by name; every other role is a deliberation actor's."""
        by_role = {OWNER: self.owner, REVIEWER: self.reviewer, ARBITER: self.arbiter}
        return by_role.get(role, self.deliberation or self.arbiter)


class Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class Summon(Record):
    """A person's call for the arbiter (`arbitrate [now] [note]`), pending on the task until the
    driver acts on it: after the running turn (or at once with `now`, which stops that turn)."""

    by: str
    note: str = ""
    now: bool = False
    at: float


class Task(Record):
    id: int
    room: str  # RoomRef.key
    group: str
    text: str
    status: str  # one of its protocol's statuses (rooms.base.machine.StateTable)
    version: int
    rounds: int = 0  # owner/reviewer rounds since the last human message or ruling
    arbitrations: int = 0
    turns: int = 0
    created_at: float
    updated_at: float
    closed_at: float | None = None  # set when the task closes
    tokens: int = 0
    cost_usd: float = 0.0
    protocol: str = "pair"  # the name it is registered under (rooms.core.registry)
    failures: int = 0  # consecutive failed runs
    grants: int = 0  # ceilings people raised once more
    opened_by: str = ""
    summon: Summon | None = None  # a pending `arbitrate` request, if any
    # The git tree the reviewer last approved (rooms/work/snapshots.py): what the engine commits.
    approved_tree: str | None = None


class Turn(Record):
    id: int
    task_id: int
    seq: int
    role: str
    status: Literal["running", "done", "failed", "interrupted"]
    output: str = ""
    marker: str | None = None
    unmarked: bool = False
    error: str | None = None
    tree: str | None = None
    session_id: str | None = None
    tree_before: str | None = None  # the workspace it was compared with (a wrap-up's approval)
    resumed_from: str | None = None  # the session it resumed
    started_at: float
    ended_at: float | None = None
    structured: dict[str, Any] | None = None  # the JSON-schema output, when one was asked for
    # Where an owner's or reviewer's marker came from: its validated object or its text.
    marker_source: str | None = None
    # Why the marker is not the turn's own first one, when in doubt (rooms/judge/turn_objects.py):
    # "conflicting", "qualified", "uncertain" (text), "conditions", "open_findings" (object).
    marker_doubt: str | None = None


class Ruling(Record):
    """The arbiter's validated ruling (DESIGN §5)."""

    verdict: Verdict
    reasons: str = ""
    conditions: list[str] = Field(default_factory=list)  # REVISE
    new_direction: str = ""  # RESET
    question: str = ""  # ESCALATE
    options: list[str] = Field(default_factory=list)  # ESCALATE
    references_cited: list[str] = Field(default_factory=list)
    dissent: str = ""
    # Why the ruling goes against a unanimous panel of reference opinions (rooms/references).
    override_reason: str = ""
    # Before ruling: a question about what the code does, to be settled by tests run in the
    # workspace (the pair's resolving phase, rooms/pair/resolving.py); "" when none is asked.
    resolve: str = ""
    readable: bool = True  # False when the arbiter output could not be read


class Firing(Record):
    """A detector that fired after a turn, with its reason (DESIGN §4)."""

    # stagnation, repeated_findings, unchanged, oscillation, blocked, round_cap, ceiling, summoned
    detector: str
    reason: str
    fingerprint: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
