"""The debate machine over scripted replies: phases in order, both sides at once, a frame
disagreement reported, ties to the cautious side, retries and failures."""

from __future__ import annotations

import json
from typing import Any

from rooms.debate.limits import DebateLimits
from rooms.debate.machine import advance, plan, start
from rooms.debate.state import DebateState
from rooms.phased.deliberation import Conclusion, Post, Reply
from tests.rooms.debate import scripts

LIMITS = DebateLimits()


def reply(
    key: str,
    obj: dict[str, Any] | None = None,
    *,
    text: str | None = None,
    error: str | None = None,
) -> Reply:
    return Reply(
        key,
        output=text if text is not None else json.dumps(obj),
        error=error,
        tokens=100,
        cost_usd=0.01,
    )


def run(
    script: dict[str, list[Any]],
) -> tuple[DebateState, list[Post], Conclusion | None, list[list[str]]]:
    """Drive the machine: each phase's asks get the next scripted reply of their actor."""
    state = start("Move billing to the new queue", "the platform lead")
    posts: list[Post] = []
    asked: list[list[str]] = []
    for _ in range(20):
        asks = plan(state, LIMITS)
        if not asks:
            break
        asked.append([a.key for a in asks])
        replies = []
        for a in asks:
            item = script[a.key].pop(0)
            replies.append(item if isinstance(item, Reply) else reply(a.key, item))
        state, new, conclusion = advance(state, replies, LIMITS)
        posts += new
        if conclusion is not None:
            return state, posts, conclusion, asked
    return state, posts, None, asked


def full_script(**overrides: list[Any]) -> dict[str, list[Any]]:
    script: dict[str, list[Any]] = {
        "advocate": [
            scripts.frame(),
            scripts.advocate_brief(),
            scripts.questions("what if load doubles?"),
            scripts.answers("we shard"),
        ],
        "challenger": [
            scripts.frame(),
            scripts.challenger_brief(),
            scripts.questions("where is the failover test?"),
            scripts.answers("it saturates at 2x"),
        ],
        "referee": [scripts.referee()],
    }
    script.update(overrides)
    return script


def test_a_debate_runs_its_phases_in_order_with_both_sides_at_once() -> None:
    state, posts, conclusion, asked = run(full_script())
    assert asked == [["advocate", "challenger"]] * 4 + [["referee"]]
    assert state.phase == "done" and conclusion is not None and not conclusion.needs_people
    assert state.tokens == 900 and round(state.cost_usd, 2) == 0.09
    assert state.participants == ["advocate", "challenger", "referee"]
    personas = [p.persona for p in posts]
    assert personas.count("advocate") == 3 and personas.count("challenger") == 3
    assert posts[-1].persona == "referee"


def test_a_tie_goes_to_the_cautious_side() -> None:
    _, posts, conclusion, _ = run(full_script(referee=[scripts.referee(7.0, 7.0)]))
    assert conclusion is not None
    assert (
        "Preferred: the **challenger** — a tie (70.0 to 70.0) goes to the cautious side"
        in conclusion.summary
    )
    assert "**Preferred:** the challenger — a tie" in conclusion.record


def test_the_better_case_wins() -> None:
    _, _, conclusion, _ = run(full_script(referee=[scripts.referee(8.0, 6.0)]))
    assert conclusion is not None and "Preferred: the **advocate**" in conclusion.summary


def test_sides_that_disagree_on_the_frame_are_reported_and_recorded() -> None:
    script = full_script()
    script["advocate"][0] = scripts.frame(False, horizon="two quarters")
    script["challenger"][0] = scripts.frame(False, horizon="three years")
    state, posts, conclusion, _ = run(script)
    assert any(
        "The sides disagree on the frame" in p.text and "Time horizon" in p.text for p in posts
    )
    assert conclusion is not None
    assert "| Time horizon | two quarters | three years |" in conclusion.record
    assert "disagreed on the frame" in conclusion.summary


def test_an_unreadable_answer_is_asked_again_once_saying_why() -> None:
    script = full_script()
    script["advocate"].insert(1, reply("advocate", text="I think we should just do it."))
    state, posts, conclusion, asked = run(script)
    assert asked[1] == ["advocate", "challenger"] and asked[2] == ["advocate"]
    assert any("asking once more" in p.text for p in posts)
    assert conclusion is not None and state.phase == "done"


def test_the_retry_prompt_says_what_was_wrong() -> None:
    state = start("d", "a")
    state, _, _ = advance(
        state,
        [reply("advocate", {"accept": "maybe"}), reply("challenger", scripts.frame())],
        LIMITS,
    )
    (again,) = plan(state, LIMITS)
    assert (
        again.key == "advocate" and "could not be used" in again.prompt and "accept" in again.prompt
    )


def test_failing_twice_ends_the_debate_as_failed_saying_who() -> None:
    script = full_script()
    script["challenger"][1:2] = [
        reply("challenger", error="crashed"),
        reply("challenger", error="crashed again"),
    ]
    state, posts, conclusion, _ = run(script)
    assert state.phase == "failed" and conclusion is not None and conclusion.failed
    assert (
        "the challenger's brief could not be used twice: the run failed: crashed again"
        in conclusion.summary
    )


def test_an_incomplete_report_goes_back_once_then_its_gaps_are_recorded() -> None:
    thin = scripts.referee(options=[{"option": "Do it", "conditions": ""}])
    state, posts, conclusion, asked = run(full_script(referee=[thin, thin]))
    assert asked[-2:] == [["referee"], ["referee"]]
    assert any("report is incomplete" in p.text for p in posts)
    assert conclusion is not None and "referee's report: an option set" in conclusion.record


def test_an_irreconcilable_debate_asks_the_people() -> None:
    _, _, conclusion, _ = run(full_script(referee=[scripts.referee(irreconcilable=True)]))
    assert conclusion is not None and conclusion.needs_people
    assert conclusion.options == ("Move behind a flag", "Wait a quarter")


def test_extra_questions_are_deferred_and_the_answerer_sees_only_the_first_five() -> None:
    many = scripts.questions(*[f"q{i}" for i in range(8)])
    script = full_script()
    script["advocate"][2] = many
    state = start("d", "a")
    for key_items in (0, 1, 2):
        asks = plan(state, LIMITS)
        state, _, _ = advance(state, [reply(a.key, script[a.key][key_items]) for a in asks], LIMITS)
    challenger_ask = next(a for a in plan(state, LIMITS) if a.key == "challenger")
    assert "5. (assumption) q4" in challenger_ask.prompt and "q5" not in challenger_ask.prompt
