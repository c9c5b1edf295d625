"""The stagnation fingerprint of one owner/reviewer round (DESIGN §4).

SHA-256 over what the round produced with its noise masked: the owner's output, the reviewer's
findings (sorted: reordering the same findings is not progress), both markers and the workspace
tree hash after the round. Two rounds with the same fingerprint did the same thing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from rooms.base.words import OWNER
from rooms.judge.findings import findings
from rooms.judge.noise import digest, normalize

# Fingerprints already computed, by a SHA-256 of the round's raw inputs. Each reviewer turn
# fingerprints every round since the last reset, all but the newest the same rounds as at the
# turn before, and normalizing their text is most of the detectors' work (about a quarter of a
# millisecond per KiB). A fingerprint is a pure function of those inputs, so an entry is never
# stale and there is nothing to invalidate; the key is a hash of the inputs, not the texts, so
# the memo stays small however long the outputs are. Bounded (the least recently used goes) and
# locked: detectors run on worker threads.
_MEMO_SIZE = 4096
_memo: OrderedDict[str, str] = OrderedDict()
_memo_lock = threading.Lock()


def fingerprint(
    owner_text: str,
    reviewer_text: str,
    markers: Sequence[str | None] = (),
    tree: str | None = None,
) -> str:
    """Hex SHA-256 of a round: normalized owner output, reviewer findings, markers, tree hash."""
    marks = [marker or "-" for marker in markers]
    key = digest("round", owner_text, reviewer_text, str(len(marks)), *marks, tree or "-")
    with _memo_lock:
        known = _memo.get(key)
        if known is not None:
            _memo.move_to_end(key)
            return known
    computed = _fingerprint(owner_text, reviewer_text, marks, tree)
    with _memo_lock:
        _memo[key] = computed
        if len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)
    return computed


def _fingerprint(owner_text: str, reviewer_text: str, marks: list[str], tree: str | None) -> str:
    found = sorted(normalize(item) for item in findings(reviewer_text))
    return digest(
        OWNER,
        normalize(owner_text),
        "findings",
        str(len(found)),
        *found,
        "markers",
        *marks,
        "tree",
        tree or "-",
    )


def reason_fingerprint(marker: str, reason: str) -> str:
    """Hex SHA-256 of a BLOCKED / NEEDS_CONTEXT reason, so the same reason is recognised after
    a ruling even when its timestamps or temp paths changed."""
    return digest("blocked", marker, normalize(reason))
