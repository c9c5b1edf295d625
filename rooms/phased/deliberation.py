"""What the three deliberation protocols (arena, debate, resolve) share: the runs a phase asks
for, what comes back, and what a phase produces.

Each protocol is a pure machine over its own state (replayed from the task's turns):
`plan(state)` says which runs the current phase needs (several at once run in parallel),
`advance(state, replies)` takes their outcomes and returns the next state, the posts for the
room and, at the end, the conclusion.
rooms.phased.protocol turns asks into run specs and outcomes into store changes, for the generic
driver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from runners.protocol import Check

RETRIES = 1  # an actor whose run fails or whose answer cannot be read is asked once more


@dataclass(frozen=True)
class Ask:
    """One run a phase needs. `key` names the actor within the protocol run (e.g. `advocate`,
    `expert:fleet-operator`); `role` names its prompt file (`debate-advocate`).

    With `checks`, the run is no agent's: the engine runs those commands itself in the task's
    container (runners/command.py) and the run's structured output is what they did; `role`
    and `schema` are then unused."""

    key: str
    role: str
    prompt: str
    schema: dict[str, Any] | None = None
    checks: tuple[Check, ...] = ()


@dataclass(frozen=True)
class Reply:
    """What a run gave back."""

    key: str
    output: str = ""
    structured: dict[str, Any] | None = None
    error: str | None = None  # set: the run failed
    tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class Post:
    persona: str
    text: str


@dataclass(frozen=True)
class Conclusion:
    """How a protocol run ended: its record (Markdown) and summary, and whether people must
    decide (a failed run, no winner, an irreconcilable debate)."""

    title: str
    summary: str
    record: str
    needs_people: bool = False
    question: str = ""
    options: tuple[str, ...] = ()
    failed: bool = False
    files: dict[str, str] = field(default_factory=dict)  # worktree-relative path → content


class Spending(Protocol):
    """What every protocol's state counts of its runs."""

    tokens: int
    cost_usd: float
    participants: list[str]


def charge(state: Spending, reply: Reply) -> None:
    """Count a run's tokens and cost on the state and name its actor among the participants."""
    state.tokens += reply.tokens
    state.cost_usd += reply.cost_usd
    if reply.key not in state.participants:
        state.participants.append(reply.key)


def retry_note(problem: str) -> str:
    """Appended to the prompt of an actor asked again."""
    return (
        "\n\n## Your previous answer could not be used\n\n"
        f"{problem}\n\nAnswer again, with the structured object exactly as the schema says."
    )
