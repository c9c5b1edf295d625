"""The progress judge's rule, pure (rooms/judge/no_progress.py): reading an answer (anything
unclear is "yes"), when it is due, two "no" in a row; and `tribunal replay --judge FILE`, which
replays recorded judgments offline through the same rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from rooms.judge import no_progress
from rooms.judge.detectors import Step
from rooms.judge.replay import replay
from rooms.judge.transcript import parse_transcript
from tests.rooms.test_engine_no_progress import REWORDED


@pytest.mark.parametrize(
    ("answer", "progress", "readable"),
    [
        ('{"progress": "no", "finding_ids": ["F1"]}', False, True),
        ('{"progress": "yes", "finding_ids": []}', True, True),
        ('```json\n{"progress": "No"}\n```', False, True),
        ('Here you go: {"progress": false}', False, True),
        ("｛＂progress＂：＂no＂｝", False, True),  # full-width punctuation
        ('{"progress": "maybe"}', True, False),
        ('{"progress": "non"}', True, False),  # not one of the two words asked for
        ("no progress at all", True, False),  # prose: no object
        ('{"progress": "no"', True, False),  # cut off
        ('["no"]', True, False),
        ("", True, False),
        ('{"progress": "いいえ"}', True, False),
    ],
)
def test_an_answer_is_read_and_anything_unclear_is_yes(
    answer: str, progress: bool, readable: bool
) -> None:
    judged = no_progress.read(answer)
    assert (judged.progress, judged.readable) == (progress, readable)


def test_finding_ids_are_kept_short_and_few() -> None:
    judged = no_progress.read(json.dumps({"progress": "no", "finding_ids": ["x" * 99] * 50}))
    assert len(judged.finding_ids) == 20 and all(len(i) == 40 for i in judged.finding_ids)


def _steps(reviews: list[str]) -> list[Step]:
    steps: list[Step] = []
    for i, review in enumerate(reviews):
        steps.append(Step("turn", "owner", f"DONE\ntake {i}", "DONE", f"t{i}"))
        marker = "APPROVED" if review.startswith("APPROVED") else "CHANGES_REQUESTED"
        steps.append(Step("turn", "reviewer", review, marker, f"t{i}"))
    return steps


def test_the_judge_is_due_from_the_third_unapproved_review() -> None:
    assert [no_progress.due(_steps(REWORDED[:n]), 3) for n in range(1, 6)] == [
        False, False, True, True, True,
    ]  # fmt: skip
    approved_then = _steps([*REWORDED[:3], "APPROVED", REWORDED[3]])
    assert not no_progress.due(approved_then, 3)  # one round since the approval
    assert not no_progress.due(_steps(REWORDED[:3])[:-1], 3)  # after an owner turn


def test_two_no_in_a_row_fire_and_nothing_else_does() -> None:
    no, yes = no_progress.read('{"progress": "no"}'), no_progress.read('{"progress": "yes"}')
    unread = no_progress.failed("timed out")
    assert no_progress.fires(no, no)
    assert not no_progress.fires(no, None)
    assert not no_progress.fires(no, yes) and not no_progress.fires(yes, no)
    assert not no_progress.fires(no, unread) and not no_progress.fires(unread, no)


def _transcript(rounds: int) -> str:
    turns = []
    for i in range(rounds):
        turns.append({"role": "owner", "text": f"DONE\nreworded, take {i}", "tree": f"t{i}"})
        turns.append({"role": "reviewer", "text": REWORDED[i], "tree": f"t{i}"})
    return json.dumps({"task": "make the client retry", "turns": turns})


def test_replay_with_recorded_judgments_fires_where_the_engine_would() -> None:
    transcript = parse_transcript(_transcript(5))
    no = '{"progress": "no"}'
    rows = replay(transcript, judgments={5: no, 7: no, 9: no})
    # Round 4's review (turn 7) is the second "no"; with no ruling after it, round 5's is too.
    assert [r.deadlock for r in rows] == [None] * 7 + ["no_progress", None, "no_progress"]
    # Without a judge the content detectors see nothing in five rounds.
    assert all(r.deadlock is None for r in replay(transcript))
    # Garbage, or none recorded, counts as "yes": nothing fires.
    garbage = replay(transcript, judgments={5: "hmm", 7: no, 9: "{}"})
    assert all(r.deadlock is None for r in garbage)
    assert all(
        r.deadlock is None for r in replay(transcript, judgments={7: no, 9: no}) if r.turn < 9
    )


def test_tribunal_replay_judge_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "stall.json"
    path.write_text(_transcript(5))
    judge = tmp_path / "judge.json"
    no = '{"progress": "no", "finding_ids": ["retry limit"]}'
    judge.write_text(
        json.dumps({"judgments": [{"turn": 5, "answer": no}, {"turn": 7, "answer": no}]})
    )
    assert main(["replay", str(path), "--json", "--judge", str(judge)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["deadlock"] for r in rows].index("no_progress") == 7
    bad = tmp_path / "bad.json"
    bad.write_text('{"judgments": [{"turn": "seven"}]}')
    assert main(["replay", str(path), "--judge", str(bad)]) == 2
    assert "not a judgments file" in capsys.readouterr().err
    assert main(["replay", str(path), "--judge", str(tmp_path / "none.json")]) == 2
