"""The arena as a protocol the driver runs (`@tribunal arena <question>`)."""

from __future__ import annotations

from collections.abc import Sequence

from rooms.arena import machine
from rooms.arena.limits import NAME, ArenaLimits
from rooms.arena.state import ArenaState
from rooms.base.model import GroupPolicy, Task
from rooms.core.registry import ProtocolSpec
from rooms.phased.deliberation import Ask, Conclusion, Post, Reply
from rooms.phased.protocol import PhasedProtocol

LABELS = {
    "panel": "choosing the panel",
    "research": "researchers gathering context",
    "debate": "the experts debate",
    "synthesis": "writing the synthesis",
}


class ArenaMachine:
    name = NAME
    command = NAME  # `@tribunal arena …`
    phases = tuple(LABELS)

    def start(self, task: Task, policy: GroupPolicy) -> ArenaState:
        return machine.start(task.text)

    def phase(self, state: ArenaState) -> str:
        return state.phase

    def plan(self, state: ArenaState, policy: GroupPolicy) -> list[Ask]:
        return machine.plan(state, policy.limits(NAME, ArenaLimits))

    def advance(
        self, state: ArenaState, replies: Sequence[Reply], policy: GroupPolicy, now: float
    ) -> tuple[ArenaState, list[Post], Conclusion | None]:
        return machine.advance(state, replies, policy.limits(NAME, ArenaLimits), now)

    def opened_text(self, user: str) -> str:
        return (
            f"🏟️ Arena opened by {user}: a panel of expert personas is chosen, researchers "
            "gather context, the experts argue with rated evidence, and a synthesis is saved."
        )

    def label(self, phase: str) -> str:
        return LABELS.get(phase, phase)


ARENA = PhasedProtocol(ArenaMachine())
# How the rest of Tribunal sees it (rooms.core.registry): registered by rooms/__init__.py.
SPEC = ProtocolSpec(
    ARENA,
    limits=ArenaLimits,
    prompt_roles=machine.PROMPT_ROLES,
    usage="<question>",
    summary="ask a panel of experts",
)
