"""What the arbitration does with a readable ruling before it is applied (DESIGN §5): checked
against the reference opinions (a label that was not shown, a unanimous panel overruled without
a reason: sent back once, then applied without what it got wrong), and, with the swap check, read
a second time with the positions swapped (a PROCEED/REVISE stands only when both readings agree;
otherwise the tie rule of rooms/judge/positions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rooms.base.model import Ruling, Turn
from rooms.base.words import SIDING, WORK_ROLES
from rooms.core.protocol import Step
from rooms.judge.positions import SIDE_BUDGET, irreversible, seat, swap_rule
from rooms.judge.sendback import earlier_send_back
from rooms.judge.verdicts import parse_ruling
from rooms.pair import fairness
from rooms.pair.arbiter_prompt import current_panel
from rooms.references.arbitration import card_sections, room_lines, verdict_fields
from rooms.references.checks import check_references, cited_labels, overrules
from rooms.references.panel import Panel
from rooms.references.render import record_section

NO_REASON = "(none given, though the ruling was sent back once for it)"


@dataclass(frozen=True)
class Review:
    """Apply `ruling` (with the verdict's extra fields, the room's lines and the record's
    sections), or, when `ruling` is None, ask the arbiter again: the ruling is sent back with
    `problem`, or (no problem) it was the swap check's first reading."""

    ruling: Ruling | None
    problem: str | None = None
    verdict_fields: dict[str, Any] = field(default_factory=dict)
    room: list[str] = field(default_factory=list)
    card: list[tuple[str, str]] = field(default_factory=list)  # (heading, body) for the card
    record: list[str] = field(default_factory=list)


async def review(step: Step, turn: Turn, ruling: Ruling, reason: str) -> Review:
    history, turn_seq = step.history, turn.seq
    use = await current_panel(step, turn.id, reason)
    panel = use.panel
    problem = check_references(ruling, panel)
    if problem is not None:
        if earlier_send_back(history.turns, turn_seq) is None:
            return Review(None, problem=problem)
        ruling = _without_faults(ruling, panel)
    seed = use.seed if use.seed is not None else 0
    swap_note = None
    if step.policy.swap_check and ruling.readable and ruling.verdict in SIDING:
        first = fairness.first_reading(history)
        if first is None:
            return Review(None)
        earlier = parse_ruling(first.output, None)
        ruling, swap_note = swap_rule(
            earlier, ruling, irreversible_change=irreversible(_what_changes(step))
        )
    record_fairness = {
        "seed": seed,
        "first": seat(seed).first,  # who sat as Position A in the first reading
        "swap": swap_note,
        "swap_on": step.policy.swap_check,
        "cut": fairness.cut(history),  # the length check: {side: characters before the cut}
        "models": fairness.model_note(step.policy),
    }
    return Review(
        ruling,
        verdict_fields={**verdict_fields(use), "fairness": record_fairness},
        room=room_lines(ruling, use),
        card=card_sections(ruling, use),
        record=[record_section(ruling, panel), _fairness_section(record_fairness, swap_note)],
    )


def _without_faults(ruling: Ruling, panel: Panel | None) -> Ruling:
    """The ruling, sent back once already, without what it still gets wrong."""
    shown = set(panel.labels) if panel is not None else set()
    cited = [
        c for c in ruling.references_cited if (labels := cited_labels(c)) and set(labels) <= shown
    ]
    update: dict[str, Any] = {"references_cited": cited}
    if overrules(ruling, panel) and not ruling.override_reason.strip():
        update["override_reason"] = NO_REASON
    return ruling.model_copy(update=update)


def _what_changes(step: Step) -> str:
    words = [fairness.latest_words(step.history, role) for role in WORK_ROLES]
    return "\n".join([step.task.text, *words])


def _fairness_section(data: dict[str, Any], swap_note: str | None) -> str:
    lines = [
        "## Fair input",
        "",
        f"Position A was the {data['first']}'s (seat drawn from seed {data['seed']}); the sides' "
        "names were masked and each cut to the same length.",
    ]
    cut = data["cut"]
    if cut:
        lines += [
            f"Length check: the {side}'s position was cut from {size:,} to {SIDE_BUDGET:,} "
            "characters."
            for side, size in cut.items()
        ]
    else:
        lines.append(
            f"Length check: neither side was cut (each within {SIDE_BUDGET:,} characters)."
        )
    if swap_note:
        lines.append(f"{swap_note}.")
    elif not data.get("swap_on", True):
        lines.append("Swap check: off for this group (arbiter.swap_check = false).")
    else:
        lines.append("Swap check: not needed, the ruling does not decide between the sides.")
    lines.append(f"Models: {data['models']}.")
    return "\n".join(lines)
