"""The engine's finding ids across structured reviews (rooms/judge/finding_ledger.py)."""

from __future__ import annotations

from rooms.judge.finding_ledger import Ledger, findings_summary, open_findings_section
from rooms.judge.turn_objects import ReviewerTurn
from tests.fakes.turn_objects import finding, review_object


def _review(*findings: dict[str, str]) -> ReviewerTurn:
    return ReviewerTurn.model_validate(review_object("CHANGES_REQUESTED", findings=list(findings)))


def test_new_findings_get_the_engines_next_numbers_whatever_id_the_model_wrote() -> None:
    first = Ledger().numbered(_review(finding("", "a", "x"), finding("F9", "b", "y")))
    assert [f.id for f in first.findings] == ["F1", "F2"]
    ledger = Ledger().after(first)
    # An issued id is kept (in any case); a repeated one in the same review is a new finding.
    second = ledger.numbered(
        _review(finding("f2", "b", "y2"), finding("F2", "c", "z"), finding("new", "d", "w"))
    )
    assert [f.id for f in second.findings] == ["F2", "F3", "F4"]
    assert ledger.after(second).issued == 4


def test_a_finding_left_out_keeps_its_status_and_resolved_ones_close() -> None:
    ledger = Ledger().after(
        Ledger().numbered(_review(finding("", "a", "x"), finding("", "b", "y")))
    )
    later = ledger.after(ledger.numbered(_review(finding("F1", "a", "x", "resolved"))))
    assert later.open_ids() == {"F2"}  # F2 was not named: still open
    assert findings_summary(ledger, later) == (
        "**Open findings (1)**\n- **F2** `b`: y\n**Since the last review:** F1 (resolved)"
    )
    section = "\n".join(open_findings_section(later))
    assert "> **F2** `b`: y" in section and "F1" not in section
    assert open_findings_section(Ledger()) == []
