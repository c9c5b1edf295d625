"""Each reference's verdict, the tally, and what a ruling may not do with them."""

from __future__ import annotations

import pytest

from rooms.base.model import Ruling
from rooms.references.checks import check_references, cited_labels, overrules
from rooms.references.panel import Opinion, Panel
from rooms.references.tally import read_verdict, tally


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("VERDICT: REVISE\nfix it", "REVISE"),
        ("PROCEED\nfine", "PROCEED"),
        ("I think it is fine.", None),  # no verdict line
        ("```\nPROCEED\n```", None),  # fenced: not a verdict
        ("PROCEED if the tests pass", None),  # a conditional PROCEED is in doubt
        ("PROCEED\nREVISE", None),  # conflicting verdicts
        ("> PROCEED\nquoted", None),  # a quote is not a verdict
    ],
)
def test_a_reference_verdict_is_read_like_a_ruling(text: str, verdict: str | None) -> None:
    assert read_verdict(text) == verdict


@pytest.mark.parametrize(
    ("verdicts", "majority", "unanimous", "described"),
    [
        ([], None, None, "no answers"),
        (["REVISE"], "REVISE", None, "REVISE 1"),  # one is not a panel
        (["REVISE", "REVISE"], "REVISE", "REVISE", "REVISE 2"),
        (["REVISE", "REVISE", None], "REVISE", None, "REVISE 2, unreadable 1"),
        (["REVISE", "PROCEED"], None, None, "PROCEED 1, REVISE 1"),
        (["REVISE", "PROCEED", "REVISE"], "REVISE", None, "REVISE 2, PROCEED 1"),
        ([None, None], None, None, "unreadable 2"),
    ],
)
def test_tally(
    verdicts: list[str | None], majority: str | None, unanimous: str | None, described: str
) -> None:
    t = tally(verdicts)
    assert (t.majority, t.unanimous, t.describe()) == (majority, unanimous, described)


def _panel(*verdicts: str | None, dropped: int = 0) -> Panel:
    ops = [
        Opinion(i, f"R{i + 1}", f"n{i}", f"m{i}", text="x", verdict=v)
        for i, v in enumerate(verdicts)
    ]
    ops += [Opinion(len(ops) + i, "", f"d{i}", "md", error="HTTP 500") for i in range(dropped)]
    return Panel(99, tuple(ops), 0.1)


@pytest.mark.parametrize(
    ("item", "labels"),
    [("R2", ["R2"]), ("R1 and R3", ["R1", "R3"]), ("R02: agrees", ["R2"]), ("Reference A", [])],
)
def test_cited_labels(item: str, labels: list[str]) -> None:
    assert cited_labels(item) == labels


def test_citing_a_label_that_was_not_shown_is_a_problem() -> None:
    panel = _panel("REVISE", dropped=1)
    ruling = Ruling(verdict="REVISE", conditions=["x"], references_cited=["R1", "R2"])
    problem = check_references(ruling, panel)
    assert problem is not None and "R2" in problem and "the labels are: R1" in problem
    assert check_references(ruling.model_copy(update={"references_cited": ["R1"]}), panel) is None
    # A vendor-style citation names no label at all.
    vague = ruling.model_copy(update={"references_cited": ["Reference model A"]})
    assert "Reference model A" in (check_references(vague, panel) or "")
    # No panel at all: any citation is unknown.
    assert "labels are: none" in (check_references(ruling, None) or "")


def test_overruling_a_unanimous_panel_needs_a_reason() -> None:
    panel = _panel("REVISE", "REVISE")
    ruling = Ruling(verdict="PROCEED", reasons="fine")
    assert "override_reason" in (check_references(ruling, panel) or "")
    assert overrules(ruling, panel) == "REVISE"
    reasoned = ruling.model_copy(update={"override_reason": "they missed the passing test"})
    assert check_references(reasoned, panel) is None
    assert check_references(Ruling(verdict="REVISE", conditions=["a"]), panel) is None
    # Split panel: no reason owed.
    assert check_references(ruling, _panel("REVISE", "PROCEED")) is None
    # An unreadable ruling escalates as it is.
    assert check_references(ruling.model_copy(update={"readable": False}), panel) is None
