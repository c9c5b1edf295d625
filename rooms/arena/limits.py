"""The arena's limits, defined once: `bot` exposes every field as a setting of the group
(`[groups.<name>.arena]`), with these defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# The name arena registers under (rooms/__init__.py): its tasks record it, and a group's
# policy keeps these limits under it (rooms.base.model.GroupPolicy.protocol_limits).
NAME: Final = "arena"


class LimitsError(ValueError):
    """Limits that contradict each other; the message names the fields."""


@dataclass(frozen=True)
class ArenaLimits:
    panel_min: int = 3  # experts on the panel, devil's advocate included
    panel_max: int = 5
    researchers_min: int = 2  # one-shot researchers before the debate
    researchers_max: int = 4
    min_experts: int = 2  # fewer left than this: the arena reports failure
    final_positions: int = 3  # final positions that end the debate (or all the experts left)
    max_nudges: int = 2  # a silent expert is nudged at most this often, then left out
    loop_exchanges: int = 3  # exchanges between the same two, nobody shifting: a third arbitrates
    max_rounds: int = 8  # rounds of debate before the moderator asks for final positions
    soft_time_s: float = 15 * 60.0  # "time's up": final positions are asked for
    hard_time_s: float = 20 * 60.0  # the debate ends with the positions there are
    commentary_interval_s: float = 30.0  # at most one live comment per interval…
    commentary_window_s: float = 300.0  # …and at most `commentary_per_window` per window
    commentary_per_window: int = 5

    def __post_init__(self) -> None:
        problems = []
        if not 2 <= self.panel_min <= self.panel_max:
            problems.append("panel_min must be at least 2 and at most panel_max")
        if not 1 <= self.researchers_min <= self.researchers_max:
            problems.append("researchers_min must be at least 1 and at most researchers_max")
        if not 2 <= self.min_experts <= self.panel_min:
            problems.append("min_experts must be at least 2 and at most panel_min")
        if self.final_positions < 1:
            problems.append("final_positions must be at least 1")
        if self.max_nudges < 0 or self.loop_exchanges < 2 or self.max_rounds < 1:
            problems.append("max_nudges ≥ 0, loop_exchanges ≥ 2 and max_rounds ≥ 1")
        if not 0 < self.soft_time_s <= self.hard_time_s:
            problems.append("soft_time_s must be positive and at most hard_time_s")
        if self.commentary_interval_s < 0 or self.commentary_window_s <= 0:
            problems.append("commentary_interval_s ≥ 0 and commentary_window_s > 0")
        if self.commentary_per_window < 1:
            problems.append("commentary_per_window must be at least 1")
        if problems:
            raise LimitsError("; ".join(problems))
