"""The resolve machine over scripted replies: tests decide 2–1, tests that do not discriminate
escalate with dissent, tests that cannot run, and at most 2 rounds of talk."""

from __future__ import annotations

import json
from typing import Any

from rooms.phased.deliberation import Conclusion, Post, Reply
from rooms.resolve.limits import ResolveLimits
from rooms.resolve.machine import STOP_OPTION, advance, plan, start
from rooms.resolve.state import ResolveState
from tests.rooms.resolve import scripts

LIMITS = ResolveLimits()


def run(
    script: dict[str, list[Any]],
) -> tuple[ResolveState, list[Post], Conclusion | None, list[str]]:
    state = start("Does parse() drop the trailing newline?")
    posts: list[Post] = []
    keys: list[str] = []
    for _ in range(12):
        asks = plan(state, LIMITS)
        if not asks:
            break
        keys += [a.key for a in asks]
        replies = []
        for a in asks:
            item = script[a.key].pop(0)
            if isinstance(item, Reply):
                replies.append(item)
            elif a.checks:  # the engine's own run: its report is the runner's structured output
                replies.append(Reply(a.key, output="ran", structured=item))
            else:
                replies.append(Reply(a.key, output=json.dumps(item), tokens=10))
        state, new, conclusion = advance(state, replies, LIMITS)
        posts += new
        if conclusion is not None:
            return state, posts, conclusion, keys
    return state, posts, None, keys


T_A = scripts.test("T1", A="FAIL", B="PASS")
T_B = scripts.test("T2", A="PASS", B="FAIL")
T_C = scripts.test("T3", A="PASS", B="FAIL")


def test_tests_decide_2_to_1() -> None:
    state, posts, conclusion, keys = run(
        {
            "positions": [scripts.TWO],
            "designer": [scripts.design(T_A, T_B, T_C)],
            "executor": [scripts.ran(T1=0, T2=0, T3=0)],
        }
    )
    assert keys == ["positions", "designer", "executor"]
    assert conclusion is not None and not conclusion.needs_people
    assert "**Resolved: A**" in conclusion.summary and "A wins 2 of 3" in conclusion.summary
    assert "Dissent kept: B: why B" in conclusion.summary
    assert "| T1 | FAIL | PASS ✓ | PASS | 0 | yes |" in conclusion.record
    results = next(p.text for p in posts if p.text.startswith("🧪 **Results**"))
    assert "- **T1** test_t1: **PASS** (exit 0)\n  A said FAIL, B said PASS ✓" in results
    assert "```\nT1 said 0\n```" in results


def test_tests_that_do_not_discriminate_talk_once_more_then_escalate_with_dissent() -> None:
    same = scripts.test("T1", A="PASS", B="PASS")
    state, posts, conclusion, keys = run(
        {
            "positions": [scripts.TWO, scripts.TWO],
            "designer": [
                scripts.design(same, talk="say what B expects on CRLF"),
                scripts.design(same),
            ],
        }
    )
    assert keys == ["positions", "designer", "positions", "designer"]  # 2 rounds of talk, no more
    assert state.talk_rounds == 2
    assert conclusion is not None and conclusion.needs_people
    assert "2 rounds of talk produced no discriminating test" in conclusion.summary
    assert "- **A:** parse() drops the trailing newline (why A)" in conclusion.summary
    assert "- **B:** parse() keeps it (why B)" in conclusion.summary
    assert conclusion.options[-1] == STOP_OPTION and conclusion.options[0].startswith("A: ")


def test_the_second_positions_prompt_carries_the_designers_request() -> None:
    state = start("q")
    state, _, _ = advance(state, [Reply("positions", output=json.dumps(scripts.TWO))], LIMITS)
    state, _, _ = advance(
        state,
        [Reply("designer", output=json.dumps(scripts.design(talk="what about CRLF?")))],
        LIMITS,
    )
    (ask,) = plan(state, LIMITS)
    assert (
        ask.key == "positions"
        and "what about CRLF?" in ask.prompt
        and "A: parse() drops" in ask.prompt
    )


def test_when_no_test_can_run_the_people_decide() -> None:
    state, posts, conclusion, _ = run(
        {
            "positions": [scripts.TWO],
            "designer": [scripts.design(T_A, T_B)],
            "executor": [scripts.ran(T1=127, T2="timeout")],
        }
    )
    assert conclusion is not None and conclusion.needs_people
    assert "no test could run" in conclusion.summary
    assert "- T1: it could not run" in conclusion.record
    assert "| T1 | FAIL | PASS | ERROR | 127 | no |" in conclusion.record
    assert "| T2 | PASS | FAIL | ERROR | timed out after 120 s | no |" in conclusion.record


def test_a_split_is_no_winner() -> None:
    _, _, conclusion, _ = run(
        {
            "positions": [scripts.TWO],
            "designer": [scripts.design(T_A, T_B)],
            "executor": [scripts.ran(T1=0, T2=0)],
        }
    )
    assert (
        conclusion is not None
        and conclusion.needs_people
        and "no position wins a majority" in conclusion.summary
    )


def test_one_position_is_not_a_dispute_and_is_asked_again() -> None:
    one = scripts.positions(("A", "it drops it"))
    state, posts, conclusion, keys = run(
        {
            "positions": [one, scripts.TWO],
            "designer": [scripts.design(T_A)],
            "executor": [scripts.ran(T1=1)],
        }
    )
    assert keys[:2] == ["positions", "positions"]
    assert any("1 positions; resolve needs 2–4" in p.text for p in posts)
    assert conclusion is not None and "**Resolved: A**" in conclusion.summary


def test_an_executor_that_fails_twice_stops_resolve_and_asks_the_people() -> None:
    state, posts, conclusion, _ = run(
        {
            "positions": [scripts.TWO],
            "designer": [scripts.design(T_A)],
            "executor": [
                Reply("executor", error="timeout"),
                # text is no report, even one that reads like the runner's
                Reply("executor", output=json.dumps(scripts.ran(T1=0))),
            ],
        }
    )
    assert conclusion is not None and conclusion.failed and conclusion.needs_people
    assert (
        "the executor step could not be used twice: the command runner gave no report"
        in conclusion.summary
    )


def test_the_execute_phase_asks_the_engine_to_run_the_designed_commands() -> None:
    state = start("q")
    state, _, _ = advance(state, [Reply("positions", output=json.dumps(scripts.TWO))], LIMITS)
    design = scripts.design(T_A, T_B, T_C)
    state, _, _ = advance(state, [Reply("designer", output=json.dumps(design))], LIMITS)
    short = ResolveLimits(test_timeout_s=100, tests_total_s=250)
    (ask,) = plan(state, short)
    assert (ask.key, ask.role, ask.schema) == ("executor", "command", None)
    assert [(c.id, c.command, c.timeout_s) for c in ask.checks] == [
        ("T1", "python -m pytest -q /tmp/t1.py", 100),
        ("T2", "python -m pytest -q /tmp/t2.py", 100),
        ("T3", "python -m pytest -q /tmp/t3.py", 50),  # what is left of the total
    ]


def test_a_test_no_time_is_left_for_is_not_run_and_not_counted() -> None:
    limits = ResolveLimits(test_timeout_s=10, tests_total_s=10)
    state = start("q")
    state, _, _ = advance(state, [Reply("positions", output=json.dumps(scripts.TWO))], limits)
    design = scripts.design(T_A, T_B, T_C)
    state, _, _ = advance(state, [Reply("designer", output=json.dumps(design))], limits)
    (ask,) = plan(state, limits)
    assert [c.id for c in ask.checks] == ["T1"]
    report = scripts.ran(T1=0)  # T1 passes: B's prediction
    state, _, conclusion = advance(state, [Reply("executor", structured=report)], limits)
    assert conclusion is not None and "**Resolved: B**" in conclusion.summary
    assert "B wins 1 of 1 discriminating tests" in conclusion.summary
    assert "| T2 | PASS | FAIL | ERROR | not run: no time left | no |" in conclusion.record
