"""The structured `Card` of a ruling, an escalation and a decided escalation
(rooms.base.model.Card), for platforms that draw cards (Slack Block Kit, Discord embeds). The
plain text of each message stays the full version, which the console prints and every platform
can fall back to."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from rooms.base.model import Card, Ruling
from rooms.base.records import Escalation

_DECIDED = {
    "approve": "✅ Approved",
    "reject": "❌ Rejected",
    "answer": "💬 Answered",
    "choose": "🔘 Chosen",
}
_HEADING = {"answer": "Answer", "choose": "Choice"}


def numbered(options: Sequence[str]) -> str:
    return "\n".join(f"{n}. {option}" for n, option in enumerate(options, 1))


def ruling_card(ruling: Ruling, record_path: str | None) -> Card:
    title = f"⚖️ Ruling: {ruling.verdict}" if ruling.readable else "⚖️ Ruling unreadable"
    sections: list[tuple[str, str]] = []
    if ruling.reasons:
        sections.append(("Reasons", ruling.reasons))
    if ruling.conditions:
        sections.append(("Conditions", "\n".join(f"- {c}" for c in ruling.conditions)))
    if ruling.new_direction:
        sections.append(("New direction", ruling.new_direction))
    if ruling.question:
        sections.append(("Question", ruling.question))
    if ruling.options:
        sections.append(("Options", numbered(ruling.options)))
    if ruling.dissent:
        sections.append(("Dissent", ruling.dissent))
    return Card(kind="ruling", title=title, sections=tuple(sections), record_path=record_path)


def escalation_card(
    task_id: int,
    question: str,
    reason: str,
    options: Sequence[str],
    what_answers_do: str,
    who_answers: str,
) -> Card:
    """`what_answers_do`: the protocol's words for its answers (rooms.core.escalations.wording)."""
    sections = [("Question", question)]
    if reason:
        sections.append(("Why", reason))
    if options:
        sections.append(("Options", numbered(options)))
    return Card(
        kind="escalation",
        title=f"❓ Task #{task_id} needs a decision",
        sections=tuple(sections),
        footer=f"{what_answers_do} {who_answers}".strip(),
    )


def decided_card(escalation: Escalation, *, user: str, kind: str, text: str, at: float) -> Card:
    """What the escalation's card becomes once decided: who decided what and when, no buttons
    (platforms that can edit a card update the escalation's in place; `ref` names it)."""
    sections = [("Question", escalation.question)]
    if escalation.options:
        sections.append(("Options", numbered(escalation.options)))
    if text:
        sections.append((_HEADING.get(kind, "Comment"), text))
    when = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Card(
        kind="decided",
        title=f"{_DECIDED.get(kind, _DECIDED['answer'])} by {user}",
        sections=tuple(sections),
        footer=f"Decided by {user} at {when}.",
        ref=str(escalation.id),
    )
