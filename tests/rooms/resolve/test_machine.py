"""The resolve machine over scripted replies: tests decide 2–1, tests that do not discriminate
escalate with dissent, tests that cannot run, and at most 2 rounds of talk."""

from __future__ import annotations

import json
from typing import Any

from rooms.deliberation import Conclusion, Post, Reply
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
            replies.append(
                item
                if isinstance(item, Reply)
                else Reply(a.key, output=json.dumps(item), tokens=10)
            )
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
            "executor": [scripts.results(T1="PASS", T2="PASS", T3="PASS")],
        }
    )
    assert keys == ["positions", "designer", "executor"]
    assert conclusion is not None and not conclusion.needs_people
    assert "**Resolved: A**" in conclusion.summary and "A wins 2 of 3" in conclusion.summary
    assert "Dissent kept: B: why B" in conclusion.summary
    assert "| T1 | FAIL | PASS ✓ | PASS | yes |" in conclusion.record


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
            "executor": [scripts.results(T1="ERROR", T2="ERROR")],
        }
    )
    assert conclusion is not None and conclusion.needs_people
    assert "no test could run" in conclusion.summary
    assert "- T1: it could not run" in conclusion.record


def test_a_split_is_no_winner() -> None:
    _, _, conclusion, _ = run(
        {
            "positions": [scripts.TWO],
            "designer": [scripts.design(T_A, T_B)],
            "executor": [scripts.results(T1="PASS", T2="PASS")],
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
            "executor": [scripts.results(T1="FAIL")],
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
            "executor": [Reply("executor", error="timeout"), Reply("executor", output="all good!")],
        }
    )
    assert conclusion is not None and conclusion.failed and conclusion.needs_people
    assert "the executor step could not be used twice: no JSON object found" in conclusion.summary
