"""Fair input for the arbiter (DESIGN §5): the two sides as "Position A" and "Position B" in a
seeded random order, their role names masked where they argue, each cut to the same length; and
the swap check's rule for two readings made with the order swapped.

A judge model tends to favour the position it reads first and the side whose role sounds like
authority. The order is drawn from a seed stored with the ruling; the side's own words are quoted
with "owner"/"reviewer" (and their markers) replaced by the position's letter; each side gets the
same budget of characters, so the longer speaker does not win by volume.

The swap check asks twice, the order swapped, and keeps a PROCEED or REVISE only if both readings
agree. Otherwise the tie rule: a change that can be undone gets REVISE toward the cautious side
(the verifier's objections are met first); one that cannot (deploys, deletes, publishes, sends)
goes to the people.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass

from rooms.base.model import Ruling
from rooms.base.words import (
    ESCALATE,
    OWNER,
    OWNER_MARKERS,
    REVIEWER,
    REVIEWER_MARKERS,
    REVISE,
    other_side,
)
from rooms.judge.quoting import quoted

# The `error` of a finished arbiter turn that was the swap check's first reading (the arbiter is
# asked again, the positions swapped); rooms/pair/fairness reads it back.
FIRST_READING = "swap check: first reading"
SIDE_BUDGET = 6000  # characters of each side's latest position in the arbiter's prompt
_ROLE_WORDS = re.compile(
    r"(?<![A-Za-z])(?:the\s+)?(owner|reviewer|implementer|verifier)(?:'s|s)?(?![A-Za-z])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Seating:
    """Which side sits where: `first` is the role shown as Position A."""

    seed: int
    first: str  # OWNER or REVIEWER

    @property
    def letter(self) -> dict[str, str]:
        second = other_side(self.first)
        return {self.first: "A", second: "B"}

    def swapped(self) -> Seating:
        return Seating(self.seed, other_side(self.first))


def seat(seed: int) -> Seating:
    # Its own stream, not the one that shuffles the references (rooms/references/panel.py).
    first = OWNER if random.Random(f"seat:{seed}").random() < 0.5 else REVIEWER
    return Seating(seed, first)


def mask_roles(text: str, letter: Mapping[str, str]) -> str:
    """Role names in a side's text replaced by the position letters ("the reviewer's point" →
    "Position B's point")."""

    def sub(m: re.Match[str]) -> str:
        word = m.group(1).lower()
        role = {"implementer": OWNER, "verifier": REVIEWER}.get(word, word)
        possessive = "'s" if m.group(0).lower().endswith("'s") else ""
        return f"Position {letter[role]}{possessive}"

    return _ROLE_WORDS.sub(sub, text)


def without_marker(text: str, role: str) -> str:
    """A side's text without its marker line (which would name its role)."""
    lines = text.strip().splitlines()
    markers = OWNER_MARKERS if role == OWNER else REVIEWER_MARKERS
    if lines and any(lines[0].strip().strip("*#:` ").upper().startswith(m) for m in markers):
        lines = lines[1:]
    return "\n".join(lines).strip()


def _bounded(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    return f"{text[:budget]}\n[… {len(text) - budget} more characters cut; same budget per side]"


def cut_sides(owner_text: str, reviewer_text: str, *, budget: int = SIDE_BUDGET) -> dict[str, int]:
    """The length check: each side whose position is longer than the budget, with the
    characters it had (as quoted: without its marker, roles masked), for the record."""
    letter = {OWNER: "A", REVIEWER: "B"}  # the letters' length is the same in either seating
    texts = {OWNER: owner_text, REVIEWER: reviewer_text}
    sizes = {role: len(mask_roles(without_marker(texts[role], role), letter)) for role in texts}
    return {role: size for role, size in sizes.items() if size > budget}


def positions_section(
    owner_text: str, reviewer_text: str, seating: Seating, *, budget: int = SIDE_BUDGET
) -> str:
    """The "## The positions" section: each side's latest words, masked and bounded, in the
    seating's order, with what PROCEED and REVISE mean in terms of the letters."""
    letter = seating.letter
    texts = {OWNER: owner_text, REVIEWER: reviewer_text}
    order = [seating.first, other_side(seating.first)]
    lines = [
        "## The positions",
        f"PROCEED sides with Position {letter[OWNER]} (the work stands as it is); REVISE sides "
        f"with Position {letter[REVIEWER]} (its objections must be met). Each position is its "
        f"side's latest turn, cut to the same {budget} characters, with the sides' names masked.",
    ]
    for role in order:
        said = without_marker(texts[role], role) or "(nothing said)"
        lines += [
            "",
            f"### Position {letter[role]}",
            quoted(_bounded(mask_roles(said, letter), budget)),
        ]
    return "\n".join(lines)


# --- the swap check ---------------------------------------------------------------------------

_IRREVERSIBLE = re.compile(
    r"\b(?:deploy\w*|release\w*|publish\w*|production|prod\b|force[- ]push\w*|push\s+--force"
    r"|drop\s+(?:table|database|schema)|truncate|rm\s+-rf|delete[sd]?\s+(?:the\s+)?(?:data\w*"
    r"|bucket|branch|records?|users?|backups?)|wipe\w*|destroy\w*|terraform\s+apply"
    r"|send\w*\s+(?:the\s+)?(?:e-?mails?|newsletter|invoices?)|charg\w+\s+(?:the\s+)?(?:card|customers?)"
    r"|payments?|migrat\w+\s+(?:the\s+)?(?:production|prod|live)\b)",
    re.IGNORECASE,
)
CAUTIOUS_CONDITION = (
    "meet the open objections of the verifying side before going on (the arbiter's two readings "
    "disagreed, so the cautious option wins)"
)
TIE_QUESTION = (
    "The arbiter read the two positions in both orders and ruled differently ({first} vs "
    "{second}) on a change that cannot easily be undone. How should the task go on?"
)
TIE_OPTIONS = ["Proceed with the work as it is", "Send it back to the owner", "Stop the task"]


def irreversible(text: str) -> bool:
    """Whether the task or the positions speak of a change that cannot be undone by a revert."""
    return _IRREVERSIBLE.search(text) is not None


def swap_rule(first: Ruling, second: Ruling, *, irreversible_change: bool) -> tuple[Ruling, str]:
    """The ruling that stands after a swap check, and a note for the record."""
    if first.readable and second.readable and first.verdict == second.verdict:
        return first, f"swap check: both orders ruled {first.verdict}"
    note = f"swap check: the orders disagreed ({first.verdict} vs {second.verdict}); tie rule: " + (
        "irreversible change → ESCALATE" if irreversible_change else "reversible → REVISE"
    )
    if irreversible_change:
        return (
            Ruling(
                verdict=ESCALATE,
                reasons=note,
                question=TIE_QUESTION.format(first=first.verdict, second=second.verdict),
                options=list(TIE_OPTIONS),
                references_cited=_merged(first.references_cited, second.references_cited),
            ),
            note,
        )
    revise = next((r for r in (first, second) if r.readable and r.verdict == REVISE), None)
    conditions = list(revise.conditions) if revise and revise.conditions else [CAUTIOUS_CONDITION]
    return (
        Ruling(
            verdict=REVISE,
            reasons=note + (f"\n\n{revise.reasons}" if revise and revise.reasons else ""),
            conditions=conditions,
            references_cited=_merged(first.references_cited, second.references_cited),
            dissent=" / ".join(r.reasons for r in (first, second) if r is not revise and r.reasons),
        ),
        note,
    )


def _merged(a: list[str], b: list[str]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))
