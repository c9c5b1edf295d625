"""The debate as a protocol the driver runs (`@tribunal debate <decision>`)."""

from __future__ import annotations

from collections.abc import Sequence

from rooms.base.model import GroupPolicy, Task
from rooms.core.registry import ProtocolSpec
from rooms.debate import machine
from rooms.debate.limits import NAME, DebateLimits
from rooms.debate.state import DebateState
from rooms.phased.deliberation import Ask, Conclusion, Post, Reply
from rooms.phased.protocol import PhasedProtocol

LABELS = {
    "frame": "agreeing the frame",
    "briefs": "writing the opening briefs",
    "questions": "cross-examination: questions",
    "answers": "cross-examination: answers",
    "referee": "with the referee",
}


class DebateMachine:
    name = NAME
    command = NAME  # `@tribunal debate …`
    phases = tuple(LABELS)

    def start(self, task: Task, policy: GroupPolicy) -> DebateState:
        authority = ", ".join(sorted(policy.approvers)) or "the people in the room"
        return machine.start(task.text, authority)

    def phase(self, state: DebateState) -> str:
        return state.phase

    def plan(self, state: DebateState, policy: GroupPolicy) -> list[Ask]:
        return machine.plan(state, policy.limits(NAME, DebateLimits))

    def advance(
        self, state: DebateState, replies: Sequence[Reply], policy: GroupPolicy, now: float
    ) -> tuple[DebateState, list[Post], Conclusion | None]:
        return machine.advance(state, replies, policy.limits(NAME, DebateLimits))

    def opened_text(self, user: str) -> str:
        return (
            f"⚖️ Debate opened by {user}: the advocate and the challenger agree the frame, write "
            "opening briefs, cross-examine once, and a referee scores them. `status` shows "
            "where it is; `stop` ends it."
        )

    def label(self, phase: str) -> str:
        return LABELS.get(phase, phase)


DEBATE = PhasedProtocol(DebateMachine())
# How the rest of Tribunal sees it (rooms.core.registry): registered by rooms/__init__.py.
SPEC = ProtocolSpec(
    DEBATE,
    limits=DebateLimits,
    prompt_roles=machine.PROMPT_ROLES,
    usage="<decision>",
    summary="open a debate",
)
