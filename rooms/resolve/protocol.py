"""Resolve as a protocol the driver runs (`@tribunal resolve <question>`)."""

from __future__ import annotations

from collections.abc import Sequence

from rooms.base.model import GroupPolicy, Task
from rooms.core.registry import ProtocolSpec
from rooms.phased.deliberation import Ask, Conclusion, Post, Reply
from rooms.phased.protocol import PhasedProtocol
from rooms.resolve import machine
from rooms.resolve.limits import NAME, ResolveLimits
from rooms.resolve.state import ResolveState

LABELS = {
    "positions": "stating the positions",
    "design": "designing discriminating tests",
    "execute": "running the tests in the workspace",
}


class ResolveMachine:
    name = NAME
    command = NAME  # `@tribunal resolve …`
    phases = tuple(LABELS)

    def start(self, task: Task, policy: GroupPolicy) -> ResolveState:
        return machine.start(task.text)

    def phase(self, state: ResolveState) -> str:
        return state.phase

    def plan(self, state: ResolveState, policy: GroupPolicy) -> list[Ask]:
        return machine.plan(state, policy.limits(NAME, ResolveLimits))

    def advance(
        self, state: ResolveState, replies: Sequence[Reply], policy: GroupPolicy, now: float
    ) -> tuple[ResolveState, list[Post], Conclusion | None]:
        return machine.advance(state, replies, policy.limits(NAME, ResolveLimits))

    def opened_text(self, user: str) -> str:
        return (
            f"🧪 Resolve opened by {user}: the positions are stated, tests that tell them apart "
            "are designed and run in the workspace, and the tests decide."
        )

    def label(self, phase: str) -> str:
        return LABELS.get(phase, phase)


RESOLVE = PhasedProtocol(ResolveMachine())
# How the rest of Tribunal sees it (rooms.core.registry): registered by rooms/__init__.py.
SPEC = ProtocolSpec(
    RESOLVE,
    limits=ResolveLimits,
    prompt_roles=machine.PROMPT_ROLES,
    usage="<question>",
    summary="settle a question with tests",
)
