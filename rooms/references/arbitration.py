"""Reference opinions in an arbitration (DESIGN §5): one panel per arbitration, asked before the
arbiter's first turn and stored at once with its seed (also when the group has no references:
the seed seats the two positions, rooms/judge/positions); a ruling sent back, a swap-check
reading or a turn run again after a crash reads the same panel, never asks again.

The driver's arbitration step calls `panel_for` while it builds the arbiter's prompt and hands
the `PanelUse` to the ruling's outcome, which stores it beside the verdict (`verdict_fields`)
and shows it in the room (`room_lines`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from prompts import load_prompt
from rooms.base.model import Ruling
from rooms.base.words import WORK_ROLES, is_resolving
from rooms.judge.history import History
from rooms.references.panel import Panel, consult, new_seed
from rooms.references.port import Reference
from rooms.references.render import override_line
from rooms.references.render import room_lines as panel_lines
from rooms.references.section import arbiter_section, reference_prompt


class PanelStore(Protocol):
    async def pending_panel(self, task_id: int) -> tuple[int, int | None, Panel] | None: ...

    async def save_panel(
        self, task_id: int, turn_id: int | None, panel: Panel, deadline_s: float, now: float
    ) -> int: ...


@dataclass(frozen=True)
class PanelUse:
    panel_id: int | None = None
    panel: Panel | None = None

    @property
    def section(self) -> str:
        """The arbiter's "## Reference opinions" ("" without answers)."""
        return arbiter_section(self.panel) if self.panel is not None else ""

    @property
    def seed(self) -> int | None:
        return self.panel.seed if self.panel is not None else None


async def panel_for(
    store: PanelStore,
    references: Sequence[Reference],
    *,
    task_id: int,
    turn_id: int,
    history: History,
    context: Callable[[int], str],
    deadline_s: float,
    now: float,
) -> PanelUse:
    """This arbitration's panel: the pending one when it is still this arbitration's (no owner
    or reviewer turn has finished since it was asked), else a new fan-out, stored.
    `context(seed)`: what the references read (the arbiter's context, seated by the seed)."""
    pending = await store.pending_panel(task_id)
    if pending is not None and _current(pending[1], history):
        return PanelUse(pending[0], pending[2])
    seed = new_seed()
    if references:
        prompt = reference_prompt(load_prompt("reference"), context(seed))
        panel = await consult(references, prompt, seed=seed, deadline_s=deadline_s)
    else:
        panel = Panel(seed)
    panel_id = await store.save_panel(task_id, turn_id, panel, deadline_s, now)
    return PanelUse(panel_id, panel)


def _current(asked_by: int | None, history: History) -> bool:
    turns = {t.id: t for t in history.turns}
    asking = turns.get(asked_by) if asked_by is not None else None
    if asking is None:
        return False
    return not any(
        _news(t.role) and t.status == "done" and t.seq > asking.seq for t in history.turns
    )


def verdict_fields(use: PanelUse | None) -> dict[str, Any]:
    """The VerdictDraft fields that tie a ruling to its panel."""
    if use is None or use.panel is None:
        return {}
    return {"panel_id": use.panel_id, "tally": use.panel.tally.to_json()}


def room_lines(ruling: Ruling, use: PanelUse | None) -> list[str]:
    """Under the ruling in the room: the override (if it overrules a unanimous panel), then one
    short line per reference."""
    if use is None or use.panel is None:
        return []
    line = override_line(ruling, use.panel)
    return ([line] if line else []) + panel_lines(use.panel)


def card_sections(ruling: Ruling, use: PanelUse | None) -> list[tuple[str, str]]:
    """The ruling card's sections for the references: the override, then one line each."""
    if use is None or use.panel is None or not use.panel.opinions:
        return []
    sections = []
    line = override_line(ruling, use.panel)
    if line:
        sections.append(("Overrules the references", line.split(": ", 1)[1]))
    heading, *lines = panel_lines(use.panel)
    sections.append((heading.rstrip(":"), "\n".join(lines)))
    return sections


def _news(role: str) -> bool:
    """A finished turn of this role makes a panel stale: the owner's or reviewer's work, or a
    run of the tests the arbiter asked for (the references then read their result too)."""
    return role in WORK_ROLES or is_resolving(role)
