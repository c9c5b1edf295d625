"""EJClaw's verdict and marker cases, read by Tribunal's rules (DESIGN §3) through `replay`.

Each case is a one-turn transcript: `ours_expected` is what `tribunal replay --json` must print
as the marker (owner/reviewer) or the verdict (arbiter); "NONE" means a null marker. The two
cases whose text is null (EJClaw tested a missing output there, which a transcript cannot carry:
"text" must be a string) are skipped with that reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rooms.judge.replay import replay
from rooms.judge.transcript import parse_transcript

# A copy of /work/shared/peer-cases/ejclaw_cases.json (see fixtures/peer/README.md), kept in the
# repository so the suite does not depend on files outside it.
CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "peer" / "ejclaw_cases.json").read_text()
)


def _params() -> list[Any]:
    params = []
    for index, case in enumerate(CASES):
        marks = []
        if case["text"] is None:
            marks.append(pytest.mark.skip(reason="text is null: not a valid transcript turn"))
        params.append(pytest.param(case, id=f"{index}-{case['role']}", marks=marks))
    return params


def test_the_cases_are_all_there() -> None:
    assert len(CASES) == 77
    assert sum(1 for c in CASES if c["text"] is None) == 2


# Where EJClaw lets work go on (approves, closes, proceeds, re-runs) and Tribunal's conservative
# reading holds it back; marked in the file with the reason, never deleted.
CONSERVATIVE = [1, 9, 16, 26, 27, 28, 29, 34, 54, 65, 71]


def test_the_cases_where_the_conservative_reading_wins_are_marked() -> None:
    marked = [i for i, c in enumerate(CASES) if c.get("conservative_reading_wins")]
    assert marked == CONSERVATIVE
    for i in marked:
        case = CASES[i]
        assert not case["agrees"]
        # Ours never lets the work through where EJClaw did: no approval, no PROCEED.
        assert case["ours_expected"] in ("NONE", "ESCALATE"), i
        if case["role"] == "arbiter":
            assert case["ours_expected"] == "ESCALATE"


@pytest.mark.parametrize("case", _params())
def test_peer_case(case: dict[str, Any]) -> None:
    content = json.dumps(
        {"task": case["source"], "turns": [{"role": case["role"], "text": case["text"]}]}
    )
    (row,) = replay(parse_transcript(content))
    expected = None if case["ours_expected"] == "NONE" else case["ours_expected"]
    if case["role"] == "arbiter":
        assert (row.marker, row.verdict) == (None, expected), case["note"]
    else:
        assert (row.marker, row.verdict) == (expected, None), case["note"]
    # One turn is too little history for any detector but blocked.
    stuck = expected in ("BLOCKED", "NEEDS_CONTEXT")
    assert row.deadlock == ("blocked" if stuck else None)
