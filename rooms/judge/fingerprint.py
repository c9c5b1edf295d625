"""The stagnation fingerprint of one owner/reviewer round (DESIGN §4).

SHA-256 over what the round produced with its noise masked: the owner's output, the reviewer's
findings (sorted: reordering the same findings is not progress), both markers and the workspace
tree hash after the round. Two rounds with the same fingerprint did the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence

from rooms.judge.findings import findings
from rooms.judge.noise import digest, normalize


def fingerprint(
    owner_text: str,
    reviewer_text: str,
    markers: Sequence[str | None] = (),
    tree: str | None = None,
) -> str:
    """Hex SHA-256 of a round: normalized owner output, reviewer findings, markers, tree hash."""
    found = sorted(normalize(item) for item in findings(reviewer_text))
    return digest(
        "owner",
        normalize(owner_text),
        "findings",
        str(len(found)),
        *found,
        "markers",
        *(marker or "-" for marker in markers),
        "tree",
        tree or "-",
    )


def reason_fingerprint(marker: str, reason: str) -> str:
    """Hex SHA-256 of a BLOCKED / NEEDS_CONTEXT reason, so the same reason is recognised after
    a ruling even when its timestamps or temp paths changed."""
    return digest("blocked", marker, normalize(reason))
