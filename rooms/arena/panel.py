"""Checking the moderator's proposed panel against the arena's limits."""

from __future__ import annotations

from rooms.arena.limits import ArenaLimits
from rooms.arena.outputs import PanelProposal


def panel_problems(panel: PanelProposal, limits: ArenaLimits) -> list[str]:
    """What is wrong with a proposed panel; empty when it can run."""
    problems = []
    n = len(panel.experts)
    if not limits.panel_min <= n <= limits.panel_max:
        problems.append(f"{n} experts; the panel needs {limits.panel_min}–{limits.panel_max}")
    devils = [e.slug for e in panel.experts if e.devil_advocate]
    if len(devils) != 1:
        problems.append(f"{len(devils)} devil's advocates; the panel needs exactly one")
    slugs = [e.slug for e in panel.experts]
    repeated = sorted({s for s in slugs if slugs.count(s) > 1})
    if repeated:
        problems.append("repeated slugs: " + ", ".join(repeated))
    r = len(panel.researchers)
    if not limits.researchers_min <= r <= limits.researchers_max:
        problems.append(
            f"{r} researchers; the arena needs {limits.researchers_min}–{limits.researchers_max}"
        )
    return problems
