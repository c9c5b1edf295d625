"""Transcript files and `replay` (DESIGN §10): every detector on its own recorded room, resets,
the JSON row shape, and bad files refused with a clear message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rooms.base.model import Thresholds
from rooms.judge.findings import findings, similarity
from rooms.judge.replay import ReplayRow, format_row, replay
from rooms.judge.transcript import Transcript, TranscriptError, load_transcript
from tests.rooms.test_markers import MISREADINGS

FIXTURES = Path(__file__).parent / "fixtures"

# fixture -> the (turn, detector) rows where a deadlock fires, and nothing else.
EXPECTED: dict[str, list[tuple[int, str]]] = {
    "progressing": [],
    "stagnation": [(5, "stagnation")],
    "repeated_findings": [(5, "repeated_findings")],
    "oscillation": [(4, "oscillation")],
    "oscillation_verdicts": [(7, "oscillation")],
    "blocked": [(2, "blocked")],
    "round_cap": [(11, "round_cap")],
    "ceiling": [(66, "ceiling")],
    # DESIGN §4 as changed today: a reworded stall on an unchanged tree, caught at its second
    # unchanged round; the same finding ids reworded; an answered question then fixes (quiet).
    # (Before today both ran to the round cap at turn 11.)
    "unchanged": [(5, "unchanged"), (7, "unchanged"), (9, "unchanged"), (11, "unchanged")],
    "repeated_finding_ids": [(t, "repeated_findings") for t in (5, 7, 9, 11)],
    "answered_then_fixed": [],
}


def load(name: str) -> Transcript:
    return load_transcript(str(FIXTURES / f"{name}.json"))


def deadlocks(rows: list[ReplayRow]) -> list[tuple[int, str]]:
    return [(r.turn, r.deadlock) for r in rows if r.deadlock is not None]


def transcript(*turns: tuple[str, str], task: str = "t") -> Transcript:
    return Transcript.model_validate(
        {"task": task, "turns": [{"role": role, "text": text} for role, text in turns]}
    )


def test_every_fixture_is_listed() -> None:
    assert {p.stem for p in FIXTURES.glob("*.json")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_detector_fires_on_its_own_fixture(name: str) -> None:
    assert deadlocks(replay(load(name))) == EXPECTED[name]


def test_the_progressing_fixture_really_progresses() -> None:
    # The quiet fixture must be what it claims: five rounds, new findings each round, a new
    # tree each round. Otherwise "nothing fires" would prove little.
    t = load("progressing")
    reviews = [turn for turn in t.turns if turn.role == "reviewer"]
    assert len(reviews) == 5
    assert len({turn.tree for turn in t.turns}) == 5
    found = [findings(turn.text) for turn in reviews]
    assert all(found)
    for a, b in zip(found, found[1:], strict=False):
        assert similarity(a, b) < Thresholds().findings_similarity


def test_rows_carry_markers_and_verdicts() -> None:
    rows = replay(
        transcript(
            ("owner", "DONE_WITH_CONCERNS\nworks, but slow"),
            ("reviewer", "LGTM"),
            ("owner", "no marker in this text"),
            ("reviewer", "looks fine to me"),
            ("arbiter", "**VERDICT: REVISE**\n- fix it"),
            ("arbiter", "I cannot decide"),
            ("human", "ok"),
        )
    )
    assert [(r.marker, r.verdict) for r in rows] == [
        ("DONE", None),
        ("APPROVED", None),
        (None, None),  # unmarked: null here, even though the engine counts it as DONE
        (None, None),
        (None, "REVISE"),
        (None, "ESCALATE"),  # unreadable
        (None, None),
    ]


def test_json_rows_have_exactly_the_documented_shape() -> None:
    rows = replay(transcript(("owner", "DONE")))
    assert json.loads(rows[0].model_dump_json()) == {
        "turn": 0,
        "role": "owner",
        "marker": "DONE",
        "verdict": None,
        "deadlock": None,
        "marker_source": "text",
        "doubt": None,
    }


def round_cap_with(turn: dict[str, Any], after_round: int = 3) -> Transcript:
    data = json.loads((FIXTURES / "round_cap.json").read_text())
    data["turns"].insert(after_round * 2, turn)
    return Transcript.model_validate(data)


def test_a_human_turn_resets_the_round_count() -> None:
    rows = replay(round_cap_with({"role": "human", "text": "Keep going, this is fine."}))
    assert deadlocks(rows) == []
    assert rows[6].role == "human"


def test_a_ruling_resets_the_round_count() -> None:
    rows = replay(round_cap_with({"role": "arbiter", "text": "REVISE\n- finish the README"}))
    assert deadlocks(rows) == []
    assert rows[6].verdict == "REVISE"


def test_a_reset_late_in_the_rounds_still_lets_the_cap_fire_later() -> None:
    data = json.loads((FIXTURES / "round_cap.json").read_text())
    data["turns"].insert(2, {"role": "human", "text": "fine"})  # after round 1: 5 rounds remain
    assert deadlocks(replay(Transcript.model_validate(data))) == []
    assert deadlocks(replay(Transcript.model_validate(data), Thresholds(round_cap=5))) == [
        (12, "round_cap")
    ]


@pytest.mark.parametrize(
    ("owner_after", "expected"),
    [
        # The very round ruled PROCEED on comes back: it fires at once, not after 3 rounds.
        ("DONE\nI believe parse() is correct as written.", [(5, "stagnation"), (9, "stagnation")]),
        # Something changed after the ruling: no firing yet.
        ("DONE\nparse() now returns '' for an empty string.", [(5, "stagnation")]),
    ],
)
def test_the_stagnation_ruled_proceed_on_fires_again_at_once(
    owner_after: str, expected: list[tuple[int, str]]
) -> None:
    owner = {"role": "owner", "text": "DONE\nI believe parse() is correct as written.", "tree": "a"}
    review = {"role": "reviewer", "text": "CHANGES_REQUESTED\n- parse('') is None", "tree": "a"}
    turns = [owner, review] * 3 + [
        {"role": "arbiter", "text": "PROCEED\nthe owner is right"},
        review,
        {**owner, "text": owner_after},
        review,
    ]
    rows = replay(Transcript.model_validate({"task": "t", "turns": turns}))
    assert deadlocks(rows) == expected


def test_thresholds_are_passed_through() -> None:
    # With no ruling in the transcript the cap stays exceeded, so every later review reports it.
    assert deadlocks(replay(load("progressing"), Thresholds(round_cap=3))) == [
        (5, "round_cap"),
        (7, "round_cap"),
        (9, "round_cap"),
    ]


def test_the_turn_ceiling_applies_in_replay_but_time_and_budget_do_not() -> None:
    t = load("progressing")
    assert deadlocks(replay(t, Thresholds(max_turns=4)))[0] == (3, "ceiling")
    no_budget = Thresholds(max_wall_s=0.0, max_tokens=0, max_cost_usd=0.0)
    assert deadlocks(replay(t, no_budget)) == []


def test_format_row_reads_like_a_log_line() -> None:
    assert format_row(
        ReplayRow(turn=0, role="owner", marker="DONE", verdict=None, deadlock=None)
    ) == ("  0  owner     DONE")
    assert format_row(
        ReplayRow(turn=11, role="reviewer", marker=None, verdict=None, deadlock="round_cap")
    ) == (" 11  reviewer  (no marker)  → deadlock: round_cap")
    assert "verdict ESCALATE" in format_row(
        ReplayRow(turn=3, role="arbiter", marker=None, verdict="ESCALATE", deadlock=None)
    )
    assert "(human message)" in format_row(
        ReplayRow(turn=4, role="human", marker=None, verdict=None, deadlock=None)
    )


# --- bad files -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the file is empty"),
        ("  \n", "the file is empty"),
        ('{"task": "t", "turns": [', "not JSON: Expecting value at line 1 column 25"),
        ("[1, 2]", 'expected a JSON object {"task": …, "turns": […]}, found a list'),
        ('{"turns": []}', 'missing "task"'),
        ('{"task": "t"}', 'missing "turns"'),
        ('{"task": "t", "turns": {}}', "turns must be a list of turns, found an object"),
        ('{"task": "t", "turns": ["DONE"]}', "turns[0] must be an object with role and text"),
        ('{"task": "t", "turns": [{"role": "owner"}]}', 'missing "text" in turns[0]'),
        (
            '{"task": "t", "turns": [{"role": "owner", "text": 5}]}',
            "turns[0].text must be a string, found a number",
        ),
        (
            '{"task": "t", "turns": [{"role": "owner", "text": ""}, {"role": "judge", "text": ""}]}'
            "\n",
            'turns[1].role: unknown role "judge" (expected one of owner, reviewer, arbiter, human)',
        ),
        (
            '{"task": "t", "turns": [{"role": "owner", "text": "x", "tre": "abc"}]}',
            'unknown key "tre" in turns[0]',
        ),
        ('{"task": null, "turns": []}', "task must be a string, found null"),
    ],
    ids=[
        "empty",
        "blank",
        "not json",
        "not an object",
        "no task",
        "no turns",
        "turns not a list",
        "turn not an object",
        "turn without text",
        "text not a string",
        "unknown role",
        "unknown key",
        "null task",
    ],
)
def test_bad_files_are_refused_with_a_clear_message(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "room.json"
    path.write_text(content)
    with pytest.raises(TranscriptError) as caught:
        load_transcript(str(path))
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_a_missing_or_undecodable_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="cannot read the file: No such file"):
        load_transcript(str(tmp_path / "absent.json"))
    binary = tmp_path / "room.json"
    binary.write_bytes(b'{"task": "\xff"}')
    with pytest.raises(TranscriptError, match="not UTF-8"):
        load_transcript(str(binary))


def test_a_refused_file_is_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "room.json"
    path.write_text('{"task": "t", "turns": [{"role": "judge", "text": "x"}]}')
    before = path.read_bytes()
    with pytest.raises(TranscriptError):
        load_transcript(str(path))
    assert path.read_bytes() == before


def test_a_valid_file_with_a_bom_and_no_turns_loads(tmp_path: Path) -> None:
    path = tmp_path / "room.json"
    path.write_text('{"task": "nothing happened yet", "turns": []}', encoding="utf-8-sig")
    t = load_transcript(str(path))
    assert t.task == "nothing happened yet"
    assert t.turns == [] and replay(t) == []


@pytest.mark.parametrize(("role", "text", "expected"), MISREADINGS)
def test_replay_reads_each_misreading_as_the_engine_does(
    role: str, text: str, expected: str | None
) -> None:
    (row,) = replay(transcript((role, text)))
    if role == "arbiter":
        # An unreadable or doubtful ruling escalates; it never proceeds.
        assert (row.marker, row.verdict) == (None, expected or "ESCALATE")
    else:
        assert (row.marker, row.verdict) == (expected, None)
