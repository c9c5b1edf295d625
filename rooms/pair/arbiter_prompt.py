"""The arbiter's prompt with fair input and reference opinions (DESIGN §5): the two sides as
Position A / Position B, seated by the arbitration's stored seed (swapped for the swap check's
second reading), their role names masked in the recent turns too, and the reference opinions
under neutral labels (what a ruling sent back must fix is named by rooms/pair/prompting). The
references read the same context without the opinions section."""

from __future__ import annotations

from rooms.base.words import ARBITER
from rooms.core.protocol import Step
from rooms.judge import disputes
from rooms.pair import fairness, resolving
from rooms.pair.prompting import build_prompt
from rooms.references.arbitration import PanelUse, panel_for
from rooms.references.panel import Panel


async def arbiter_prompt(step: Step, turn_id: int, reason: str) -> str:
    use = await current_panel(step, turn_id, reason)
    seed = use.seed if use.seed is not None else 0
    return _prompt(step, reason, seed, references=use.section)


async def current_panel(step: Step, turn_id: int, reason: str) -> PanelUse:
    """The arbitration's panel (asked now if it has none yet); an empty use without a store."""
    if step.panels is None:
        return PanelUse(None, Panel(0))
    return await panel_for(
        step.panels,
        step.references,
        task_id=step.task.id,
        turn_id=turn_id,
        history=step.history,
        context=lambda seed: _prompt(step, reason, seed),
        deadline_s=step.policy.reference_deadline_s,
        now=step.now,
    )


def _prompt(step: Step, reason: str, seed: int, *, references: str = "") -> str:
    seats = fairness.seating(step.history, seed)
    # A ruling sent back is named by the prompt itself (rooms/judge/sendback.resend_prompt).
    tests = resolving.section(step.history, resolving.resolve_limits(step.policy))
    # Findings disputed with evidence twice, beside that evidence (rooms/judge/disputes).
    disputed = disputes.section(step.history.pair_done, seats.letter)
    extra = [fairness.positions(step.history, seats), disputed, tests, references]
    return build_prompt(
        step.task,
        step.task.status,
        ARBITER,
        step.history,
        step.policy,
        reason=reason,
        extra=[e for e in extra if e],
        seats=seats.letter,
    )
