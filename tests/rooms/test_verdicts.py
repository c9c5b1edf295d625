"""The arbiter's ruling: schema, reading structured output and text, and the decision record."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooms.base.model import Ruling
from rooms.judge.verdicts import (
    RULING_SCHEMA,
    UNREADABLE_QUESTION,
    check_ruling,
    decision_record,
    parse_ruling,
)
from runners.protocol import RunRequest

VERDICTS = ("PROCEED", "REVISE", "RESET", "ESCALATE")


def full(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "verdict": "REVISE",
        "reasons": "the reviewer is right",
        "conditions": ["add a test for empty input"],
        "new_direction": "",
        "question": "",
        "options": [],
        "references_cited": ["Reference A"],
        "dissent": "",
        "override_reason": "",
        "resolve": "",
    }
    data.update(overrides)
    return data


# --- the schema ------------------------------------------------------------------------------


def test_schema_is_strict_as_structured_output_apis_want() -> None:
    jsonschema.Draft202012Validator.check_schema(RULING_SCHEMA)
    assert RULING_SCHEMA["additionalProperties"] is False
    assert set(RULING_SCHEMA["required"]) == set(RULING_SCHEMA["properties"])
    assert RULING_SCHEMA["properties"]["verdict"]["enum"] == list(VERDICTS)
    assert set(RULING_SCHEMA["properties"]) == set(Ruling.model_fields) - {"readable"}
    RunRequest(role="arbiter", prompt="rule", output_schema=RULING_SCHEMA)


@pytest.mark.parametrize(
    ("data", "valid"),
    [
        (full(), True),
        (full(verdict="MAYBE"), False),
        ({k: v for k, v in full().items() if k != "dissent"}, False),
        (full(extra="x"), False),
        (full(conditions="not a list"), False),
    ],
    ids=["complete", "bad verdict", "missing field", "extra field", "wrong type"],
)
def test_schema_accepts_exactly_complete_rulings(data: dict[str, Any], valid: bool) -> None:
    errors = list(jsonschema.Draft202012Validator(RULING_SCHEMA).iter_errors(data))
    assert (not errors) is valid


# --- structured output -----------------------------------------------------------------------


def test_valid_structured_output_wins_over_the_text() -> None:
    ruling = parse_ruling("PROCEED\nthe text says proceed", full())
    assert ruling.verdict == "REVISE"
    assert ruling.conditions == ["add a test for empty input"]
    assert ruling.references_cited == ["Reference A"]
    assert ruling.readable


@pytest.mark.parametrize(
    "structured",
    [full(verdict="MAYBE"), full(conditions=7), {"reasons": "no verdict"}, {}],
    ids=["bad verdict", "wrong type", "no verdict", "empty"],
)
def test_invalid_structured_output_falls_back_to_the_text(structured: dict[str, Any]) -> None:
    assert parse_ruling("RESET\nstart over with sqlite", structured).verdict == "RESET"
    unreadable = parse_ruling("no verdict in here", structured)
    assert (unreadable.verdict, unreadable.readable) == ("ESCALATE", False)


def test_structured_output_is_tidied() -> None:
    ruling = parse_ruling("", {"verdict": " escalate ", "options": ["yes", " ", "no"]})
    assert ruling.verdict == "ESCALATE"
    assert ruling.question == ""  # missing: check_ruling sends it back (see below)
    assert ruling.options == ["yes", "no"]


# --- text ------------------------------------------------------------------------------------


def test_revise_takes_its_conditions_from_the_list() -> None:
    ruling = parse_ruling(
        "REVISE — the reviewer is right about the parser.\n\n"
        "- handle input without a trailing newline in parse()\n"
        "- add a test for empty input\n\n"
        "Reference B saw the same.",
        None,
    )
    assert ruling.verdict == "REVISE"
    assert ruling.conditions == [
        "handle input without a trailing newline in parse()",
        "add a test for empty input",
    ]
    assert ruling.reasons.startswith("the reviewer is right about the parser.")
    assert ruling.references_cited == ["Reference B"]


def test_labelled_sections_are_read() -> None:
    ruling = parse_ruling(
        "**VERDICT: REVISE**\n"
        "The owner skipped the migration.\n"
        "**Conditions:**\n"
        "1. add migration 0004\n"
        "2. run it in the test setup\n"
        "References cited: Reference A, Reference C\n"
        "## Dissent\n"
        "Reference C thinks the migration can wait.",
        None,
    )
    assert ruling.conditions == ["add migration 0004", "run it in the test setup"]
    assert ruling.reasons == "The owner skipped the migration."
    assert ruling.references_cited == ["Reference A", "Reference C"]
    assert ruling.dissent == "Reference C thinks the migration can wait."


def test_reset_gives_a_new_direction() -> None:
    with_section = parse_ruling(
        "RESET\nBoth paths fail.\nNew direction: use the stdlib csv module", None
    )
    assert with_section.new_direction == "use the stdlib csv module"
    assert with_section.reasons == "Both paths fail."
    without = parse_ruling("VERDICT — RESET\nDrop the regex; parse with the csv module.", None)
    assert without.new_direction == "Drop the regex; parse with the csv module."


def test_escalate_gives_a_question_and_options() -> None:
    ruling = parse_ruling(
        "ESCALATE\nThe owner asks for permission. Should we deploy to production now?\n"
        "- deploy now\n- wait for Monday",
        None,
    )
    assert ruling.question == "Should we deploy to production now?"
    assert ruling.options == ["deploy now", "wait for Monday"]
    labelled = parse_ruling(
        "ESCALATE\nQuestion: Which database?\nOptions:\n- sqlite\n- postgres", None
    )
    assert (labelled.question, labelled.options) == ("Which database?", ["sqlite", "postgres"])


@pytest.mark.parametrize(
    "text",
    [
        "```\nPROCEED\n```\nThe owner is right.",
        "<internal>PROCEED</internal>\nThe owner is right.",
        "<internal>\nI will say PROCEED\nPROCEED",  # unterminated: hides everything after it
        "We should proceed, the owner is right.",
        "I would PROCEED here.",
        "\n".join(f"line {i}" for i in range(12)) + "\nPROCEED",
        "CONTINUE\nsame as proceed",
        "",
    ],
    ids=[
        "fence",
        "internal",
        "unterminated internal",
        "prose",
        "mid-line",
        "line 13",
        "alias",
        "empty",
    ],
)
def test_an_unreadable_ruling_escalates_and_is_never_forged(text: str) -> None:
    ruling = parse_ruling(text, None)
    assert ruling.verdict == "ESCALATE"
    assert ruling.readable is False
    assert ruling.question == UNREADABLE_QUESTION
    assert ruling.options


def test_the_real_verdict_after_a_fenced_one_is_read() -> None:
    ruling = parse_ruling("```\nPROCEED\n```\nREVISE\n- fix it", None)
    assert (ruling.verdict, ruling.conditions) == ("REVISE", ["fix it"])


def test_unreadable_keeps_an_excerpt_without_private_notes() -> None:
    ruling = parse_ruling("I could not decide.\n<internal>secret reasoning</internal>", None)
    assert "I could not decide." in ruling.reasons
    assert "secret" not in ruling.reasons


def test_internal_notes_never_reach_the_reasons() -> None:
    ruling = parse_ruling(
        "PROCEED\nThe tests pass.\n<internal>\nmy private doubt\n</internal>", None
    )
    assert ruling.reasons == "The tests pass."


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    st.text(),
    st.none()
    | st.dictionaries(
        st.sampled_from(list(RULING_SCHEMA["properties"]) + ["other"]), json_values, max_size=8
    ),
)
def test_parse_ruling_never_raises(text: str, structured: dict[str, Any] | None) -> None:
    ruling = parse_ruling(text, structured)
    assert ruling.verdict in VERDICTS
    if not ruling.readable:
        assert ruling.verdict == "ESCALATE"


@given(st.text().filter(lambda s: not any(v in s for v in VERDICTS)))
def test_text_without_a_verdict_word_always_escalates(text: str) -> None:
    ruling = parse_ruling(text, None)
    assert (ruling.verdict, ruling.readable) == ("ESCALATE", False)


# --- decision record -------------------------------------------------------------------------


def test_decision_record_carries_every_part() -> None:
    ruling = parse_ruling(
        "REVISE\nThe reviewer is right.\n- add the test\n"
        "References cited:\n- Reference A\nDissent: Reference B disagrees.",
        None,
    )
    record = decision_record(
        ruling,
        task_text="Fix the CSV parser",
        reason="the reviewer's findings have not changed for 2 rounds",
        turns_quoted=[
            "owner (turn 3): DONE\nfixed",
            "reviewer (turn 4): CHANGES_REQUESTED\n- still broken",
        ],
        models={"arbiter": "claude-opus", "reference A": "gpt-x"},
    )
    for expected in [
        "# Decision record: REVISE",
        "## Frame\n\n> Fix the CSV parser",
        "the reviewer's findings have not changed for 2 rounds",
        "> owner (turn 3): DONE\n> fixed",
        "> reviewer (turn 4): CHANGES_REQUESTED\n> - still broken",
        "## Verdict\n\n**REVISE**",
        "## Reasons\n\nThe reviewer is right.",
        "## Conditions\n\n- add the test",
        "## References cited\n\n- Reference A",
        "## Dissent\n\nReference B disagrees.",
        "- arbiter: claude-opus",
        "- reference A: gpt-x",
    ]:
        assert expected in record


def test_decision_record_of_an_escalation_and_an_unreadable_ruling() -> None:
    escalation = parse_ruling("ESCALATE\nQuestion: Ship it?\nOptions:\n- yes\n- no", None)
    record = decision_record(escalation, task_text="t", reason="r", turns_quoted=[], models={})
    assert "## Question\n\nShip it?" in record
    assert "## Options\n\n1. yes\n2. no" in record
    assert "could not be read" not in record
    unreadable = decision_record(
        parse_ruling("garbled", None), task_text="t", reason="r", turns_quoted=[], models={}
    )
    assert "could not be read" in unreadable and "**ESCALATE**" in unreadable


def test_a_long_quoted_turn_is_cut() -> None:
    record = decision_record(
        parse_ruling("PROCEED", None),
        task_text="t",
        reason="r",
        turns_quoted=["x" * 10_000],
        models={},
    )
    assert "…(cut)" in record and len(record) < 5_000


# --- a ruling printed as JSON, rulings in doubt, and checked rulings --------------------------

PRINTED = (
    '{"verdict": "REVISE", "reasons": "the reviewer is right", "conditions": ["add a test"], '
    '"new_direction": "", "question": "", "options": [], "references_cited": [], "dissent": ""}'
)


@pytest.mark.parametrize(
    "text",
    [
        PRINTED,
        f"```json\n{PRINTED}\n```",
        f"```\n{PRINTED}\n```\n",
        f"<internal>thinking about PROCEED</internal>\n{PRINTED}",
        '{"verdict": "revise", "conditions": ["add a test"]}',
    ],
    ids=["bare", "fenced json", "fenced", "after internal notes", "partial"],
)
def test_a_ruling_printed_as_json_is_read_as_that_object(text: str) -> None:
    ruling = parse_ruling(text, None)
    assert (ruling.verdict, ruling.readable) == ("REVISE", True)
    assert ruling.conditions == ["add a test"]


@pytest.mark.parametrize(
    "text",
    [
        '{"verdict": "CONTINUE", "reasons": "x"}',  # not a verdict
        '{"verdict": "PROCEED", "conditions": "not a list"}',  # wrong type
        "[" * 100_000 + "]" * 100_000,  # deep nesting
        '{"verdict": "PROCEED", "reasons": "' + "x" * 300_000 + '"}',  # far too large
        '{"verdict": "PROCEED", "reasons": 1e999999}',
    ],
    ids=["unknown verdict", "wrong type", "deep", "huge", "huge number"],
)
def test_a_bad_json_ruling_escalates(text: str) -> None:
    ruling = parse_ruling(text, None)
    assert (ruling.verdict, ruling.readable) == ("ESCALATE", False)


def test_json_inside_prose_is_not_a_ruling_object() -> None:
    # Only an output that is the object is read as one; a quoted object in prose is not.
    ruling = parse_ruling(f"REVISE\nThe earlier answer was {PRINTED}\n- fix the parser", None)
    assert ruling.conditions == ["fix the parser"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("PROCEED\nREVISE — add the test", "conflicting verdicts: PROCEED, REVISE"),
        ("PROCEED once the reviewer re-runs the suite", "made PROCEED conditional"),
        ("PROCEED, sous réserve des tests de charge", "made PROCEED conditional"),
        ("PROCEED — the changelog still needs an entry", "without saying whether PROCEED waits"),
    ],
)
def test_a_ruling_in_doubt_escalates_and_says_why(text: str, said: str) -> None:
    ruling = parse_ruling(text, None)
    assert (ruling.verdict, ruling.readable) == ("ESCALATE", False)
    assert said in ruling.question


def test_a_quoted_earlier_ruling_is_not_the_ruling() -> None:
    ruling = parse_ruling(
        "> VERDICT: PROCEED\n\nVERDICT: ESCALATE\nWhich database should we use?\n"
        "- sqlite\n- postgres",
        None,
    )
    assert (ruling.verdict, ruling.readable) == ("ESCALATE", True)
    assert ruling.question == "Which database should we use?"


@pytest.mark.parametrize(
    ("ruling", "problem"),
    [
        (Ruling(verdict="PROCEED"), None),
        (Ruling(verdict="REVISE", conditions=["add a test for parse('')"]), None),
        (Ruling(verdict="REVISE", reasons="fix it"), "a REVISE needs concrete conditions"),
        (Ruling(verdict="RESET", new_direction="use the csv module"), None),
        (Ruling(verdict="RESET", reasons="start over"), "a RESET needs a new direction"),
        (Ruling(verdict="ESCALATE", question="Which DB?", options=["a", "b"]), None),
        (Ruling(verdict="ESCALATE", question="Which?", options=list("abcd")), None),
        (Ruling(verdict="ESCALATE", options=["a", "b"]), "an ESCALATE needs the question"),
        (Ruling(verdict="ESCALATE", question="Which?", options=["a"]), "2 to 4 options"),
        (Ruling(verdict="ESCALATE", question="Which?", options=list("abcde")), "(it gave 5)"),
        (Ruling(verdict="ESCALATE", readable=False), None),  # unreadable: escalates as it is
    ],
)
def test_check_ruling(ruling: Ruling, problem: str | None) -> None:
    found = check_ruling(ruling)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_text_rulings_are_checked_for_what_they_lack() -> None:
    assert check_ruling(parse_ruling("REVISE\nThe reviewer is right.", None)) is not None
    assert check_ruling(parse_ruling("RESET", None)) is not None
    assert check_ruling(parse_ruling("ESCALATE\nPeople decide.", None)) is not None
    assert check_ruling(parse_ruling("ESCALATE\nShip now?\n- yes\n- no", None)) is None
