"""Context that does not grow (rooms/pair/sessions.py): which session a turn resumes, what a
resumed turn is sent, and a 12-round task whose per-turn input stays within a stated bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from prompts import load_prompt
from rooms.base.model import GroupPolicy, Thresholds, Turn
from rooms.judge.history import History
from rooms.pair.sessions import resume_for, resumed_since, session_chain
from tests.fakes.engine_kit import engine_kit
from tests.fakes.session_model import CHARS_PER_TOKEN, SessionModelRunner, long_task


def turn(seq: int, role: str, session: str, resumed: str | None = None, out: str = "x") -> Turn:
    return Turn(
        id=seq,
        task_id=1,
        seq=seq,
        role=role,
        status="done",
        output=out,
        session_id=session,
        resumed_from=resumed,
        started_at=0.0,
    )


def history(*turns: Turn) -> History:
    return History(list(turns), [], [], [])


CHAIN = history(
    turn(1, "owner", "o1"),
    turn(2, "reviewer", "r1"),
    turn(3, "owner", "o2", resumed="o1"),
    turn(4, "reviewer", "r2", resumed="r1"),
    turn(5, "owner", "o3", resumed="o2"),
    turn(6, "reviewer", "r3"),  # a fresh reviewer session
)


def test_the_chain_of_a_session() -> None:
    assert [t.seq for t in session_chain(CHAIN, "owner", "o3")] == [5, 3, 1]
    assert [t.seq for t in session_chain(CHAIN, "reviewer", "r3")] == [6]
    assert resumed_since(CHAIN, "owner", "o3") == 5
    assert resumed_since(CHAIN, "owner", None) is None


@pytest.mark.parametrize(
    ("role", "session_turns", "session_chars", "expected"),
    [
        ("owner", 3, None, None),  # o3 holds three turns: the next starts afresh
        ("owner", 4, None, "o3"),
        ("reviewer", 3, None, "r3"),
        ("reviewer", 1, None, None),  # one turn per session: always fresh
        ("reviewer", 3, 0, None),  # r3 has read 1 character of outputs > 0
        ("reviewer", 3, 1, "r3"),
    ],
)
def test_resume_for(
    role: str, session_turns: int, session_chars: int | None, expected: str | None
) -> None:
    assert resume_for(CHAIN, role, session_turns, session_chars) == expected


async def test_a_resumed_turn_is_sent_only_the_new_turns(tmp_path: Path) -> None:
    runner = SessionModelRunner(
        {
            "owner": ["DONE\nfirst try ALPHA", "DONE\nsecond try GAMMA", "DONE\nwrapped"],
            "reviewer": ["CHANGES_REQUESTED\n- BETA is missing", "APPROVED"],
        }
    )
    async with engine_kit(tmp_path, runner=runner) as kit:  # type: ignore[arg-type]
        await kit.say("@tribunal build the TASK-TEXT parser")
        await kit.settle()
    owner2 = runner.prompts[2]
    assert runner.reads[2].resumed and "resuming your session" in owner2
    assert "BETA is missing" in owner2  # new to it
    assert "ALPHA" not in owner2  # its session holds it
    assert "TASK-TEXT" in owner2  # the task is in every prompt
    assert "TASK-TEXT" in runner.prompts[0] and not runner.reads[0].resumed


ROUNDS = 12
ANSWER = 1500
# The bound on what one turn reads (characters), whatever the number of rounds: the system
# prompt, a fresh prompt (headers, task and rulings ~1,000; 12 one-line summaries of older turns
# ≤ 12 × 200; the newest turns in full within recent_chars, plus the one that starts past it),
# or a resumed one, which only happens while its session has read ≤ session_chars of outputs.
POLICY = GroupPolicy(
    name="g",
    approvers=frozenset({"boss"}),
    thresholds=Thresholds(round_cap=ROUNDS + 5, max_turns=10 * ROUNDS),
)
FRESH_BOUND = (
    max(len(load_prompt(r)) for r in ("owner", "reviewer"))
    + 1_000
    + 12 * 200
    + (POLICY.recent_chars + ANSWER + 100)
)
# A resumed turn reads its session (a fresh read, then the outputs it has seen since, at most
# session_chars when it was resumed) and its new prompt's headers (≤ 1,000 each).
BOUND = FRESH_BOUND + POLICY.session_chars + (POLICY.session_turns - 1) * 1_000


async def test_a_12_round_task_reads_within_the_bound_each_turn(tmp_path: Path) -> None:
    runner = SessionModelRunner(long_task(ROUNDS, ANSWER))
    async with engine_kit(tmp_path, policy=POLICY, runner=runner) as kit:  # type: ignore[arg-type]
        await kit.say("@tribunal write a streaming config parser with tests")
        await kit.settle(timeout=60)
        assert (await kit.task()).status == "closed"
    work = [r for r in runner.reads if r.role in ("owner", "reviewer")]
    assert len(work) == 2 * ROUNDS + 1  # 12 rounds and the wrap-up
    assert max(r.chars for r in work) <= BOUND, (max(r.chars for r in work), BOUND)
    # Flat: the last rounds read no more than the bound, and about what round 6 read.
    owner = [r.chars for r in work if r.role == "owner"]
    assert owner[ROUNDS - 1] <= 1.3 * owner[5]
    # Against resending the whole transcript: ≥ 3× fewer of Tribunal's characters at round 12
    # (≥ 4× when no turn resumes, at session_chars 3000; the default lets half the turns resume
    # for prompt-cache hits: less input billed, bench_context, once Claude Code's own ~48K
    # characters per request are counted, beside which both save ~1.4-1.5× of the request).
    transcript = sum(len(a) for a in runner.answers[: 2 * (ROUNDS - 1)])
    assert transcript / owner[ROUNDS - 1] >= 3, (transcript, owner[ROUNDS - 1])
    assert sum(r.resumed for r in work) >= ROUNDS // 2  # resumed sessions do happen
    assert FRESH_BOUND // CHARS_PER_TOKEN < 3_000 and BOUND // CHARS_PER_TOKEN < 5_000
