"""The detectors as a registry (rooms/judge/detectors.py DETECTORS): every detector the engine
runs is declared once, with its thresholds and what a PROCEED on it means, and the settings, the
check's order and README's lists are made from the declarations."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import rooms  # noqa: F401  (the protocols: the settings module reads them)
from bot.settings_sections import ThresholdSettings
from rooms.base.model import Thresholds
from rooms.judge.detectors import _CONTENT_DETECTORS, DETECTORS, detector, remembers_proceed

README = Path(__file__).parents[2] / "README.md"
# Thresholds that are the engine's own caps, not a detector's.
ENGINE_CAPS = {"max_arbitrations", "max_changed_wrapups"}


def shown(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def readme_rows() -> list[str]:
    return [
        f"| `thresholds.{t.setting}` | `{shown(t.default)}` | {t.meaning} |"
        for spec in DETECTORS
        for t in spec.thresholds
    ]


def test_each_threshold_is_a_field_of_thresholds_and_a_setting_with_its_default() -> None:
    declared = [t.setting for spec in DETECTORS for t in spec.thresholds]
    assert len(declared) == len(set(declared))
    assert set(declared) | ENGINE_CAPS == {f.name for f in fields(Thresholds)}
    settings = ThresholdSettings()
    assert set(ThresholdSettings.model_fields) == set(declared) | {"max_arbitrations"}
    assert settings.to_thresholds() == Thresholds()


def test_the_check_runs_the_declared_detectors_in_order() -> None:
    assert tuple(d.detect for d in DETECTORS if d.detect is not None) == _CONTENT_DETECTORS
    assert [d.name for d in DETECTORS] == [
        "ceiling", "blocked", "stagnation", "repeated_findings", "unchanged", "oscillation",
        "round_cap", "no_progress",
    ]  # fmt: skip


def test_what_a_proceed_means_is_declared() -> None:
    assert [d.name for d in DETECTORS if d.proceed_remembered] == ["stagnation"]
    assert [d.name for d in DETECTORS if d.repeat_asks_people] == ["blocked", "stagnation"]
    assert remembers_proceed("stagnation") and not remembers_proceed("round_cap")
    assert detector("summoned") is None and not remembers_proceed("summoned")


def test_readme_lists_every_detector_and_threshold() -> None:
    text = README.read_text(encoding="utf-8")
    names = " · ".join(d.name.replace("_", " ") for d in DETECTORS)
    assert f"│  {names}\n" in text
    table = [line for line in text.splitlines() if line.startswith("| `thresholds.")]
    assert [r for r in table if "max_arbitrations" not in r] == readme_rows()
