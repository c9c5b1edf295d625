"""What a deadlock detector declares about itself (DESIGN §4): its name, the thresholds a group
may set for it, and what a PROCEED on what it found means later.

The detectors themselves are in rooms/judge/detectors.py, each registered there in `DETECTORS`
with its spec; the engine's check runs them in that order, the settings offer their thresholds
(`[groups.<name>.thresholds]`, bot/settings_sections.py), the pair and replay read the flags, and
a test holds README's thresholds table to them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rooms.base.model import Firing, Thresholds

# A content detector (rooms/judge/detectors.py `Detector`): the steps since the last human
# message or ruling, their completed rounds and the group's thresholds → the firing, or None.
Detect = Callable[..., Firing | None]


@dataclass(frozen=True)
class Threshold:
    """One setting, `thresholds.<setting>`: a field of rooms.base.model.Thresholds (its default is
    that field's), the bounds a group's value must keep (`ge`/`gt`, `le`) and what it means."""

    setting: str
    meaning: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None

    @property
    def default(self) -> int | float:
        value: int | float = getattr(Thresholds, self.setting)
        return value


@dataclass(frozen=True)
class DetectorSpec:
    """A detector as the rest of Tribunal sees it.

    `name`: what its firings are recorded under. `detect`: the content detector (None: the
    engine checks it itself, as the ceilings and a stuck marker). `thresholds`: its settings.
    `proceed_remembered`: the fingerprints the arbiter ruled PROCEED on are kept, and the same
    round coming back fires at once. `repeat_asks_people`: the same finding again after a
    PROCEED asks the people instead of a second ruling. `summary`: when it fires, in a line."""

    name: str
    summary: str
    detect: Detect | None = None
    thresholds: tuple[Threshold, ...] = ()
    proceed_remembered: bool = False
    repeat_asks_people: bool = False
