"""A task's history as the detectors read it (DESIGN §4): its steps (owner and reviewer turns,
human messages, rulings), the window since the last human message or ruling, and the rounds in
that window, each an owner's turns and the review that closed them.

This is what every detector compares (rooms/judge/detectors.py): the engine builds the steps
from the store (rooms/judge/history.py) and `tribunal replay` from a transcript
(rooms/judge/replay.py), so both are judged on the same cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from rooms.base.words import APPROVED, OWNER, REVIEWER, UNMARKED
from rooms.judge.findings import finding_ids, findings
from rooms.judge.fingerprint import fingerprint

# Characters of one turn or message the detectors read: their normalising and similarity work
# grows with the text, and a few 4 MiB outputs must not stall the engine; the head of a turn is
# where its marker, findings and summary are.
TEXT_LIMIT = 64 * 1024


def bounded(text: str) -> str:
    return text[:TEXT_LIMIT]


@dataclass(frozen=True)
class Step:
    kind: Literal["turn", "human", "ruling"]
    role: str  # owner / reviewer / arbiter / human
    text: str
    marker: str | None  # canonical owner/reviewer marker, or the verdict for a ruling
    tree: str | None = None  # workspace tree hash after the turn
    at: float = 0.0  # unix time
    # A structured review's open findings by the engine's ids (rooms/judge/finding_ledger.py);
    # None for any other step, whose findings are read from its text.
    open_ids: frozenset[str] | None = None


@dataclass(frozen=True)
class Round:
    """The owner's turns since the previous review, and the review that closed them."""

    owner: tuple[Step, ...]
    reviewer: Step
    # The workspace the owner started from: the tree after the review (or the human message or
    # ruling) before this round; None when unknown, or when that review approved (the owner
    # was then wrapping up, not answering a request for changes).
    tree_before: str | None = None

    @property
    def approved(self) -> bool:
        return self.reviewer.marker == APPROVED

    @property
    def tree(self) -> str | None:
        trees = [s.tree for s in (*self.owner, self.reviewer) if s.tree is not None]
        return trees[-1] if trees else None

    @cached_property
    def findings(self) -> list[str]:
        return [] if self.approved else findings(self.reviewer.text)

    @cached_property
    def finding_ids(self) -> frozenset[str] | None:
        return finding_ids(self.findings)

    @cached_property
    def fingerprint(self) -> str:
        markers = [effective_marker(s) for s in (*self.owner, self.reviewer)]
        owner_text = "\n\n".join(s.text for s in self.owner)
        return fingerprint(owner_text, self.reviewer.text, markers, self.tree)


def since_reset(steps: Sequence[Step]) -> Sequence[Step]:
    """The steps after the last human message or ruling (all of them when there is none)."""
    for index in range(len(steps) - 1, -1, -1):
        if steps[index].kind != "turn":
            return steps[index + 1 :]
    return steps


def rounds_of(window: Sequence[Step], tree_before: str | None = None) -> list[Round]:
    """Completed rounds: each reviewer turn closes the owner turns before it. `tree_before`:
    the workspace when the window opened (the last tree before it)."""
    rounds: list[Round] = []
    owner: list[Step] = []
    for step in window:
        if step.role == REVIEWER:
            r = Round(owner=tuple(owner), reviewer=step, tree_before=tree_before)
            rounds.append(r)
            owner = []
            tree_before = None if r.approved else (r.tree or tree_before)
        elif step.role == OWNER:
            owner.append(step)
    return rounds


def last_tree(steps: Sequence[Step]) -> str | None:
    return next((s.tree for s in reversed(steps) if s.kind == "turn" and s.tree), None)


def effective_marker(step: Step) -> str | None:
    """An unmarked turn counts as DONE (owner) or CHANGES_REQUESTED (reviewer), as in the engine."""
    if step.marker is not None:
        return step.marker
    return UNMARKED.get(step.role)
