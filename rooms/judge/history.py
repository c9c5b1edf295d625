"""A task's history as the detectors and the prompts see it, as the store reads it
(`Store.history`).

Order: turns by seq; a human message goes right before the first turn that could see it
(`before_seq`); an arbiter's turn is a ruling. Failed and interrupted turns are not history:
they produced nothing the pair worked from.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rooms.base.model import Turn
from rooms.base.records import FiringRow, Message, VerdictRow
from rooms.base.words import ARBITER, HUMAN, OWNER, RESET, ROLES
from rooms.judge.finding_ledger import Ledger, stored_review
from rooms.judge.steps import Step, bounded


@dataclass(frozen=True)
class History:
    turns: list[Turn]  # every turn, any status, by seq
    messages: list[Message]
    verdicts: list[VerdictRow]
    firings: list[FiringRow]
    waited_s: float = 0.0  # time spent waiting for people on answered escalations

    @property
    def done(self) -> list[Turn]:
        return [t for t in self.turns if t.status == "done"]

    @property
    def pair_done(self) -> list[Turn]:
        """The finished turns of the pair's own roles: not the runs of tests an arbiter asked
        for (rooms/pair/resolving.py), which reach the pair as their result, not as rounds."""
        return [t for t in self.done if t.role in ROLES]

    def steps(self) -> list[Step]:
        verdict_by_turn = {v.turn_id: v for v in self.verdicts}
        keyed: list[tuple[tuple[int, int, int], Step]] = []
        for m in self.messages:
            keyed.append(
                ((m.before_seq, 0, m.id), Step("human", HUMAN, _bounded(m.text), None, at=m.at))
            )
        ledger = Ledger()
        for t in self.pair_done:
            open_ids = None
            review = stored_review(t)
            if review is not None:  # a structured review: its findings by the engine's ids
                ledger = ledger.after(review)
                open_ids = ledger.open_ids()
            if t.role == ARBITER:
                v = verdict_by_turn.get(t.id)
                marker = v.ruling.verdict if v else None
                step = Step(
                    "ruling", ARBITER, _bounded(t.output), marker, at=t.ended_at or t.started_at
                )
            else:
                at = t.ended_at or t.started_at
                step = Step("turn", t.role, _bounded(t.output), t.marker, t.tree, at, open_ids)
            keyed.append(((t.seq, 1, t.id), step))
        return [step for _, step in sorted(keyed, key=lambda pair: pair[0])]

    def last_acted_firing(self) -> FiringRow | None:
        return next((f for f in reversed(self.firings) if f.acted), None)

    def session_for(self, role: str) -> str | None:
        """The session to resume for `role`: its latest finished turn's, except that the owner
        starts afresh after a RESET (and the arbiter always does)."""
        if role == ARBITER:
            return None
        after = 0
        if role == OWNER:
            resets = [v.turn_seq for v in self.verdicts if v.ruling.verdict == RESET]
            after = max(resets, default=0)
        for t in reversed(self.done):
            if t.role == role and t.seq > after and t.session_id:
                return t.session_id
        return None

    def with_turn(self, turn: Turn) -> History:
        """This history with `turn` replaced (e.g. the running turn as it has just ended)."""
        turns = [turn if t.id == turn.id else t for t in self.turns]
        return History(turns, self.messages, self.verdicts, self.firings, self.waited_s)

    def firing(self, firing_id: int | None) -> FiringRow | None:
        return next((f for f in self.firings if f.id == firing_id), None)


@lru_cache(maxsize=256)
def _bounded(text: str) -> str:
    """`bounded`, once per text: a history kept between steps (rooms/core/kept_history.py)
    hands the same strings to every step, and cutting 64 KiB out of each long output again at
    every step made a step cost more as the task grew. Keyed by the string itself (its hash is
    cached on it, and the same object compares equal at once)."""
    return bounded(text)
