"""Findings checked before they count (rooms/judge/disputes.py): a finding the owner disputed
with evidence twice is shown to the arbiter side by side with that evidence (through the real
engine); a dispute without evidence, or made once, is not; and the measurement that this changes
no detection turn and no false-alarm count, on the project's fixtures and a held-out set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rooms.base.markers import find_marker
from rooms.base.model import Thresholds, Turn
from rooms.judge.detectors import check
from rooms.judge.disputes import has_evidence
from rooms.judge.history import History
from rooms.judge.transcript import Transcript, load_transcript, parse_transcript
from tests.fakes.engine_kit import engine_kit
from tests.fakes.rulings import ruling_reply
from tests.fakes.stall_transcripts import held_out
from tests.fakes.turn_objects import finding, review, work, work_object

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*.json"))
PROGRESSING = {"progressing", "answered_then_fixed"}  # the fixtures that are not stalls
FIRST = "`pytest tests/test_parse.py::test_last_line` → 1 passed"
SECOND = "> parse.py:12  return lines  # the last line is kept\n$ python parse.py a.txt → 3 lines"


def _review(id: str, text: str, prose: str) -> Any:
    return review("CHANGES_REQUESTED", prose=prose, findings=[finding(id, "parse.py:12", text)])


def _script(first: str, second: str) -> dict[str, Any]:
    return {
        "owner": [
            work("DONE", files={"parse.py": "v1\n"}, prose="wrote it"),
            work("DONE", files={"parse.py": "v2\n"}, prose="it keeps it",
                 disputed=[{"id": "F1", "evidence": first}]),
            work("DONE", files={"parse.py": "v3\n"}, prose="look again",
                 disputed=[{"id": "F1", "evidence": second}]),
        ],
        "reviewer": [
            _review("", "drops the last line", "one problem"),
            _review("F1", "still drops it", "not fixed"),
            _review("F1", "the reviewer's point stands: last line lost", "same as before"),
        ],
        "arbiter": [ruling_reply("ESCALATE", question="Which?", options=["a", "b"])],
    }  # fmt: skip


async def test_a_finding_disputed_with_evidence_twice_is_shown_beside_it(tmp_path: Path) -> None:
    async with engine_kit(tmp_path, _script(FIRST, SECOND)) as kit:
        await kit.say("@tribunal make the parser keep the last line")
        await kit.settle()
        assert kit.roles() == ["owner", "reviewer"] * 3 + ["arbiter"]
        [firing] = await kit.store.firings(1)
        assert firing.firing.detector == "repeated_findings"  # detection as before
        prompt = kit.runner.calls_for("arbiter")[0].prompt
        disputed = prompt.split("## Disputed findings")[1].split("\n## ")[0]
        assert "### F1 (parse.py:12)" in disputed
        assert "the evidence |" in disputed and "ask for tests (`resolve`)" in disputed
        rows = [line for line in disputed.splitlines() if line.startswith("| ") and "turn " in line]
        assert len(rows) == 2
        assert "last line lost" in rows[0] and "1 passed" in rows[0]  # the finding beside it
        assert "return lines" in rows[1] and "$ python parse.py" in rows[1]
        assert "reviewer" not in disputed.lower() and "owner" not in disputed.lower()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I disagree, it is fine.", "Still fine in my view."),  # no evidence
        (FIRST, "I maintain it works."),  # evidence once
    ],
)
async def test_a_dispute_without_evidence_twice_is_not_shown(
    tmp_path: Path, first: str, second: str
) -> None:
    async with engine_kit(tmp_path, _script(first, second)) as kit:
        await kit.say("@tribunal make the parser keep the last line")
        await kit.settle()
        assert "## Disputed findings" not in kit.runner.calls_for("arbiter")[0].prompt


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("`make test` → 12 passed", True),
        ("> src/a.py:40 return None", True),
        ("see util.py:12", True),
        ("$ ./run\nexit code 0", True),
        ("Traceback (most recent call last):", True),
        ("ValueError raised as the test expects", True),
        ("｀pytest｀ passes", True),  # full-width backticks
        ("I disagree with this finding.", False),
        ("It is fine, trust me.", False),
        ("これは正しいです", False),
    ],
)
def test_what_counts_as_evidence(text: str, shown: bool) -> None:
    assert has_evidence(text) is shown


def _turns(t: Transcript, disputes: dict[int, dict[str, str]], *, structured: bool) -> list[Turn]:
    turns = []
    for i, tt in enumerate(t.turns):
        obj = None
        if structured and tt.role == "owner":
            said = disputes.get(i, {"F1": "`pytest` → 3 passed"})
            obj = work_object(
                "DONE", prose=tt.text, disputed=[{"id": k, "evidence": v} for k, v in said.items()]
            )
        turns.append(
            Turn(
                id=i + 1, task_id=1, seq=i + 1, role=tt.role, status="done", output=tt.text,
                marker=find_marker(tt.text, tt.role) if tt.role in ("owner", "reviewer") else None,
                tree=tt.tree, started_at=float(i), ended_at=float(i), structured=obj,
                marker_source="object" if obj is not None else None,
            )
        )  # fmt: skip
    return turns


def _detections(turns: list[Turn]) -> list[str | None]:
    out: list[str | None] = []
    for n in range(1, len(turns) + 1):
        steps = History(turns[:n], [], [], []).steps()
        firing = check(
            steps, Thresholds(max_turns=10**6), turns=n, tokens=0, cost_usd=0.0,
            started_at=0.0, now=0.0,
        )  # fmt: skip
        out.append(firing.detector if firing else None)
    return out


def test_disputes_change_no_detection_turn_and_no_false_alarm() -> None:
    """Every owner turn carrying disputes with evidence (as many as the rooms hold) against the
    same turns without: the detectors fire at the same turns, the false alarms stay as many."""
    rooms = [(load_transcript(str(p)), {}, p.stem not in PROGRESSING) for p in FIXTURES]
    rooms += [(parse_transcript_dict(r.transcript), r.disputes, r.stall) for r in held_out()]
    false_alarms = [0, 0]
    for transcript, disputes, stall in rooms:
        plain = _detections(_turns(transcript, disputes, structured=False))
        disputed = _detections(_turns(transcript, disputes, structured=True))
        assert plain == disputed, transcript.task
        if not stall:
            false_alarms[0] += sum(d is not None for d in plain)
            false_alarms[1] += sum(d is not None for d in disputed)
    assert false_alarms[0] == false_alarms[1]
    assert len(rooms) == len(FIXTURES) + 30


def parse_transcript_dict(data: dict[str, Any]) -> Transcript:
    import json

    return parse_transcript(json.dumps(data))
