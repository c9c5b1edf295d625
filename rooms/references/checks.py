"""What a ruling does wrong with the reference opinions (DESIGN §5), in words the arbiter can act
on when the ruling is sent back: it cites a label that was not shown, or it overrules a unanimous
panel without saying why."""

from __future__ import annotations

import re

from rooms.base.model import Ruling
from rooms.references.panel import Panel

_LABEL = re.compile(r"(?<![A-Za-z0-9])R(\d{1,3})(?![0-9])")


def cited_labels(item: str) -> list[str]:
    """The R-labels one `references_cited` entry names ("R2", "R1 and R3", "R2: agrees")."""
    return [f"R{int(n)}" for n in _LABEL.findall(item)]


def check_references(ruling: Ruling, panel: Panel | None) -> str | None:
    """The problem with how `ruling` uses the panel; None when there is none. An unreadable
    ruling is not checked: it escalates as it is."""
    if not ruling.readable:
        return None
    shown = set(panel.labels) if panel is not None else set()
    unknown: list[str] = []
    for item in ruling.references_cited:
        labels = cited_labels(item)
        unknown += [item] if not labels else [x for x in labels if x not in shown]
    if unknown:
        have = ", ".join(sorted(shown, key=lambda x: int(x[1:]))) or "none"
        return (
            f"it cites {', '.join(dict.fromkeys(unknown))}, which is not a reference opinion you "
            f"were shown (the labels are: {have}); cite only those labels, or none"
        )
    unanimous = panel.tally.unanimous if panel is not None else None
    if unanimous and ruling.verdict != unanimous and not ruling.override_reason.strip():
        return (
            f"every reference opinion said {unanimous} and you ruled {ruling.verdict}: say in "
            "override_reason why they are wrong, or rule with them"
        )
    return None


def overrules(ruling: Ruling, panel: Panel | None) -> str | None:
    """The unanimous verdict the ruling goes against, if it does."""
    unanimous = panel.tally.unanimous if panel is not None else None
    return unanimous if unanimous and ruling.readable and ruling.verdict != unanimous else None
