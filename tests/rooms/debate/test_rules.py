"""Debate rules as tables: the rubric, ties to the cautious side, the frame, the one round of
cross-examination, completeness gates, and the record."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooms.debate.completeness import advocate_gaps, challenger_gaps, report_gaps
from rooms.debate.cross import answered, asked
from rooms.debate.frame import check_frame, frame_gaps
from rooms.debate.limits import CRITERIA, DEFAULT_WEIGHTS, DebateLimits, LimitsError
from rooms.debate.outputs import (
    ADVOCATE_SCHEMA,
    ANSWERS_SCHEMA,
    CHALLENGER_SCHEMA,
    FRAME_SCHEMA,
    QUESTIONS_SCHEMA,
    REFEREE_SCHEMA,
    AdvocateBrief,
    Answer,
    ChallengerBrief,
    CriterionScores,
    Frame,
    FrameStatement,
    Guardrail,
    Question,
    RefereeReport,
)
from rooms.debate.record import SECTIONS, DebateRecord, render
from rooms.debate.rubric import ScoreError, adjudicate, total
from rooms.judge.structured import StructuredError, read_object

LIMITS = DebateLimits()


def scores(**values: float) -> dict[str, float]:
    base = dict.fromkeys(CRITERIA, 5.0)
    base.update(values)
    return base


def test_the_default_weights_are_30_20_20_20_10() -> None:
    assert DEFAULT_WEIGHTS == {
        "evidence": 30,
        "logic": 20,
        "counter_evidence": 20,
        "quantification": 20,
        "reversibility": 10,
    }
    assert sum(LIMITS.weights.values()) == 100
    assert set(CriterionScores.model_fields) == set(CRITERIA)


@pytest.mark.parametrize(
    ("weights", "says"),
    [
        ({**DEFAULT_WEIGHTS, "evidence": 40}, "sum to 100, not 110"),
        ({**DEFAULT_WEIGHTS, "evidence": -10, "logic": 60}, "negative"),
        ({k: v for k, v in DEFAULT_WEIGHTS.items() if k != "logic"}, "name exactly"),
        ({**DEFAULT_WEIGHTS, "charisma": 0}, "name exactly"),
    ],
)
def test_weights_must_name_every_criterion_and_sum_to_100(
    weights: dict[str, int], says: str
) -> None:
    with pytest.raises(LimitsError, match=says):
        DebateLimits(weights=weights)


@pytest.mark.parametrize(
    ("advocate", "challenger", "preferred", "tie"),
    [
        (scores(evidence=8), scores(), "advocate", False),  # +9 points of 100
        (scores(), scores(reversibility=9), "challenger", False),
        (scores(), scores(), "challenger", True),  # a tie goes to the cautious side
        # equal totals from different criteria: still a tie (30×1 = 20×1.5)
        (scores(evidence=6), scores(logic=6.5), "challenger", True),
        (scores(reversibility=10), scores(reversibility=9.9), "advocate", False),
    ],
)
def test_the_preferred_side(
    advocate: dict[str, float], challenger: dict[str, float], preferred: str, tie: bool
) -> None:
    outcome = adjudicate(advocate, challenger, LIMITS)
    assert (outcome.preferred, outcome.tie) == (preferred, tie)


def test_a_tie_goes_to_whichever_side_is_set_as_cautious_and_says_so() -> None:
    outcome = adjudicate(scores(), scores(), DebateLimits(cautious_side="advocate"))
    assert outcome.preferred == "advocate" and "cautious side, the advocate" in outcome.reason
    margin = DebateLimits(tie_margin=2.0)
    assert adjudicate(scores(evidence=5.5), scores(), margin).tie  # 1.5 points apart


def test_totals_are_out_of_100() -> None:
    assert total(dict.fromkeys(CRITERIA, 10.0), LIMITS) == 100.0
    assert total(dict.fromkeys(CRITERIA, 0.0), LIMITS) == 0.0
    assert total(scores(evidence=10, logic=0), LIMITS) == 30 + 0 + 10 + 10 + 5


@pytest.mark.parametrize(
    "bad", [scores(evidence=11), scores(logic=-1), {"evidence": 5.0}, scores(logic=float("nan"))]
)
def test_scores_outside_the_rubric_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ScoreError):
        total(bad, LIMITS)


@given(
    st.lists(st.floats(0, 10), min_size=5, max_size=5),
    st.lists(st.floats(0, 10), min_size=5, max_size=5),
)
def test_the_better_total_wins_and_only_a_tie_goes_to_the_cautious_side(
    a: list[float], c: list[float]
) -> None:
    adv, ch = dict(zip(CRITERIA, a, strict=True)), dict(zip(CRITERIA, c, strict=True))
    outcome = adjudicate(adv, ch, LIMITS)
    if outcome.totals["advocate"] > outcome.totals["challenger"]:
        assert outcome.preferred == "advocate"
    else:
        assert outcome.preferred == "challenger"


FRAME = Frame(
    decision="Move billing to the new queue this quarter",
    shared_data="the load tests in bench/",
    horizon="two quarters",
    reversibility="a flag; a day to switch back",
    authority="the platform lead",
)


def test_both_sides_accepting_agree() -> None:
    check = check_frame(FRAME, FrameStatement(accept=True), FrameStatement(accept=True))
    assert check.agreed and check.frame == FRAME and check.differences == ()


def test_the_same_change_from_both_sides_is_an_agreed_new_frame() -> None:
    change = FrameStatement(accept=False, frame=Frame(horizon="one year"), objection="too short")
    check = check_frame(FRAME, change, change)
    assert check.agreed and check.frame.horizon == "one year"


def test_a_disagreement_on_the_frame_is_reported_field_by_field() -> None:
    challenger = FrameStatement(
        accept=False,
        frame=Frame(horizon="three years", reversibility="a migration; weeks to undo"),
        objection="the data migration is one-way",
    )
    check = check_frame(FRAME, FrameStatement(accept=True), challenger)
    assert not check.agreed
    assert [(d.field, d.advocate, d.challenger) for d in check.differences] == [
        ("horizon", "two quarters", "three years"),
        ("reversibility", "a flag; a day to switch back", "a migration; weeks to undo"),
    ]
    assert check.objections == (("challenger", "the data migration is one-way"),)


def test_wording_alone_is_not_a_disagreement() -> None:
    same = FrameStatement(accept=False, frame=Frame(horizon="  Two   quarters. "))
    assert check_frame(FRAME, FrameStatement(accept=True), same).agreed


def test_a_frame_without_a_decision_has_a_gap() -> None:
    assert frame_gaps(Frame()) == [
        "Decision",
        "Shared data",
        "Time horizon",
        "Reversibility",
        "Decision authority",
    ]
    assert frame_gaps(FRAME) == []


def q(text: str) -> Question:
    return Question(kind="assumption", text=text)


def test_one_round_one_answer_per_question_extra_questions_deferred() -> None:
    round_ = asked([q(f"q{i}") for i in range(7)], LIMITS.questions_per_side)
    assert [e.number for e in round_.exchanges] == [1, 2, 3, 4, 5]
    assert [d.text for d in round_.deferred] == ["q5", "q6"]
    done = answered(
        round_,
        [
            Answer(number=1, text="first"),
            Answer(number=1, text="a follow-up"),
            Answer(number=9, text="?"),
            Answer(number=3, text="third"),
        ],
    )
    assert [e.answer for e in done.exchanges] == ["first", None, "third", None, None]


def complete_advocate() -> AdvocateBrief:
    return AdvocateBrief(
        position="Move now",
        thesis="t",
        base_case="+20% throughput",
        upside_drivers=["u"],
        downside="d",
        optionality="o",
        execution_plan="e",
        kill_criteria=["k"],
    )


def complete_challenger(**fields: Any) -> ChallengerBrief:
    base: dict[str, Any] = {
        "optimistic_assumptions": ["a", "b", "c"],
        "discipline_lens": "l",
        "hidden_costs": ["h"],
        "guardrails": [Guardrail(name="p99 latency", status="margin", note="5ms left")],
        "opportunity_cost": "o",
        "reversibility_cost": "r",
        "catastrophic_conditions": ["c"],
    }
    base.update(fields)
    return ChallengerBrief(**base)


def test_brief_gaps() -> None:
    assert advocate_gaps(complete_advocate()) == []
    assert advocate_gaps(AdvocateBrief(position="x")) == [
        "strategic thesis",
        "base case",
        "upside drivers",
        "downside acknowledgment",
        "optionality preserved",
        "execution plan",
        "kill criteria",
    ]
    assert challenger_gaps(complete_challenger()) == []
    assert challenger_gaps(complete_challenger(optimistic_assumptions=["a"]))[0].startswith(
        "where the base case is too optimistic (1 assumptions"
    )
    assert challenger_gaps(complete_challenger(optimistic_assumptions=list("abcdef")))


def report(**fields: Any) -> RefereeReport:
    base: dict[str, Any] = {
        "advocate_scores": CriterionScores(**scores()),
        "challenger_scores": CriterionScores(**scores()),
        "agreement": ["the queue is faster"],
        "resolved": [],
        "unresolved": [
            {"tension": "migration risk", "data_needed": "a dry run", "cost_to_obtain": "a week"}
        ],
        "guardrails": [{"name": "P99 latency", "status": "margin", "note": "5ms"}],
        "confidence": {"level": "Medium", "reason": "one dry run missing"},
        "options": [
            {"option": "Move now behind a flag", "conditions": "if the dry run passes"},
            {"option": "Wait a quarter", "conditions": "if it does not"},
        ],
    }
    base.update(fields)
    return RefereeReport.model_validate(base)


@pytest.mark.parametrize(
    ("fields", "gap"),
    [
        ({}, None),
        ({"agreement": [], "unresolved": []}, "points of agreement or tensions"),
        ({"confidence": {"level": "low", "reason": ""}}, "the reason for the confidence"),
        ({"options": [{"option": "Do it", "conditions": "always"}]}, "an option set"),
        (
            {"options": [{"option": "Yes", "conditions": ""}, {"option": "No", "conditions": ""}]},
            "an option set",
        ),
        ({"guardrails": []}, "the status of guardrails: p99 latency"),
    ],
)
def test_report_gaps(fields: dict[str, Any], gap: str | None) -> None:
    gaps = report_gaps(report(**fields), ["p99 latency"])
    assert gaps == [] if gap is None else any(g.startswith(gap) for g in gaps)


@pytest.mark.parametrize(
    "schema",
    [
        FRAME_SCHEMA,
        ADVOCATE_SCHEMA,
        CHALLENGER_SCHEMA,
        QUESTIONS_SCHEMA,
        ANSWERS_SCHEMA,
        REFEREE_SCHEMA,
    ],
)
def test_schemas_are_strict(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"advocate_scores": {**scores(), "evidence": 12}}, "advocate_scores.evidence"),
        ({"confidence": {"level": "certain", "reason": "x"}}, "confidence.level"),
        ({"guardrails": [{"name": "x", "status": "ok"}]}, "guardrails.0.status"),
    ],
)
def test_bad_referee_reports_say_what_is_wrong(data: dict[str, Any], where: str) -> None:
    good = report().model_dump()
    good.update(data)
    with pytest.raises(StructuredError, match=re.escape(where)):
        read_object(json.dumps(good), None, RefereeReport)


@given(
    st.dictionaries(
        st.sampled_from(list(RefereeReport.model_fields)),
        st.one_of(
            st.none(), st.text(max_size=5), st.integers(), st.lists(st.text(max_size=3), max_size=2)
        ),
    )
)
def test_any_object_is_a_report_or_a_structured_error(data: dict[str, Any]) -> None:
    try:
        got = read_object(json.dumps(data), None, RefereeReport)
    except StructuredError:
        return
    assert got.confidence.level in ("high", "medium", "low")


def record(frame_ok: bool = True) -> DebateRecord:
    statement = FrameStatement(
        accept=frame_ok, frame=Frame(horizon="three years"), objection="longer"
    )
    rep = report()
    return DebateRecord(
        decision=FRAME.decision,
        frame=check_frame(FRAME, FrameStatement(accept=True), statement),
        advocate=complete_advocate(),
        challenger=complete_challenger(),
        to_challenger=answered(asked([q("why?")], 5), [Answer(number=1, text="because")]),
        to_advocate=asked([q(f"q{i}") for i in range(6)], 5),
        report=rep,
        outcome=adjudicate(
            rep.advocate_scores.model_dump(), rep.challenger_scores.model_dump(), LIMITS
        ),
    )


def test_the_record_has_every_section_and_shows_the_tie_and_the_frame_disagreement() -> None:
    doc = render(record(frame_ok=False), LIMITS)
    assert re.findall(r"^## (.+)$", doc, flags=re.MULTILINE) == list(SECTIONS)
    assert "**Preferred:** the challenger — a tie (50.0 to 50.0) goes to the cautious side" in doc
    assert "**The sides disagree on the frame**" in doc
    assert "| Time horizon | two quarters | three years |" in doc
    assert "Deferred (beyond 5 questions): 1" in doc
    assert "   - Answer: (not answered)" in doc
    assert "| Evidence quality (data and analogous precedent) | 30 | 5 | 5 |" in doc
    assert "Medium — one dry run missing" in doc


def test_a_field_left_open_and_stated_by_one_side_is_adopted() -> None:
    open_frame = FRAME.model_copy(update={"horizon": ""})
    statement = FrameStatement(accept=False, frame=Frame(horizon="a year"))
    check = check_frame(open_frame, FrameStatement(accept=True), statement)
    assert check.agreed and check.frame.horizon == "a year"
    both = check_frame(
        open_frame, FrameStatement(accept=False, frame=Frame(horizon="a month")), statement
    )
    assert not both.agreed and [d.field for d in both.differences] == ["horizon"]
