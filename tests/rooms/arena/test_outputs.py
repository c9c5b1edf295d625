"""The arena actors' outputs at the boundary: panel, expert messages, synthesis narrative."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooms.arena.limits import ArenaLimits
from rooms.arena.outputs import (
    EXPERT_SCHEMA,
    PANEL_SCHEMA,
    SYNTHESIS_SCHEMA,
    ExpertMessage,
    PanelProposal,
    SynthesisNarrative,
)
from rooms.arena.panel import panel_problems
from rooms.judge.structured import StructuredError, read_object


def persona(slug: str, *, devil: bool = False) -> dict[str, Any]:
    return {
        "slug": slug,
        "name": slug.replace("-", " ").title(),
        "angle": "operations",
        "persona": "A cautious operator of large fleets.",
        "expected_position": "",
        "devil_advocate": devil,
    }


def panel(n: int = 4, researchers: int = 3, devils: int = 1) -> dict[str, Any]:
    experts = [persona(f"expert-{i}", devil=i < devils) for i in range(n)]
    return {
        "topic": "queue choice",
        "code_question": True,
        "experts": experts,
        "researchers": [{"focus": f"focus {i}"} for i in range(researchers)],
    }


@pytest.mark.parametrize("schema", [PANEL_SCHEMA, EXPERT_SCHEMA, SYNTHESIS_SCHEMA])
def test_schemas_are_valid_and_strict(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize(
    ("data", "problems"),
    [
        (panel(), []),
        (panel(n=2), ["2 experts; the panel needs 3–5"]),
        (panel(n=6), ["6 experts; the panel needs 3–5"]),
        (panel(devils=0), ["0 devil's advocates; the panel needs exactly one"]),
        (panel(devils=2), ["2 devil's advocates; the panel needs exactly one"]),
        (panel(researchers=1), ["1 researchers; the arena needs 2–4"]),
        (panel(researchers=5), ["5 researchers; the arena needs 2–4"]),
    ],
)
def test_panel_limits(data: dict[str, Any], problems: list[str]) -> None:
    assert panel_problems(PanelProposal.model_validate(data), ArenaLimits()) == problems


def test_repeated_slugs_are_a_problem() -> None:
    data = panel()
    data["experts"][2]["slug"] = data["experts"][1]["slug"]
    assert panel_problems(PanelProposal.model_validate(data), ArenaLimits()) == [
        "repeated slugs: expert-1"
    ]


@pytest.mark.parametrize(
    "slug",
    ["Ada", "ada lovelace", "../etc", "a", "moderator", "tribunal", "-ada", "ada-", "a" * 41],
)
def test_bad_slugs_are_refused(slug: str) -> None:
    data = panel()
    data["experts"][0]["slug"] = slug
    with pytest.raises(StructuredError, match="experts.0.slug"):
        read_object(json.dumps(data), None, PanelProposal)


def message(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kind": "position",
        "to": [],
        "stance": "Use a queue",
        "shifted": False,
        "text": "Because.",
        "evidence": [
            {"title": "Docs", "source": "docs", "r": 0.9, "cl": 1.0, "load_bearing": True}
        ],
        "challenges": [],
        "veto": "none",
        "veto_reason": "",
    }
    base.update(fields)
    return base


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (message(kind="verdict"), "kind"),
        (message(evidence=[{"title": "x", "r": 1.2, "cl": 0.5}]), "evidence.0.r"),
        (message(evidence=[{"title": "x", "r": 0.5, "cl": -0.1}]), "evidence.0.cl"),
        (message(evidence=[{"title": "", "r": 0.5, "cl": 0.5}]), "evidence.0.title"),
        (message(challenges=[{"target": "bo", "weakness": ""}]), "challenges.0.weakness"),
        (message(challenges=[{"target": "bo", "weakness": "w", "cl": 3}]), "challenges.0.cl"),
        (message(veto="maybe"), "veto"),
    ],
)
def test_bad_expert_messages_say_what_is_wrong(data: dict[str, Any], where: str) -> None:
    with pytest.raises(StructuredError, match=where.replace(".", r"\.")):
        read_object(json.dumps(data), None, ExpertMessage)


def test_a_valid_message_against_the_schema_is_read() -> None:
    data = message(
        challenges=[{"target": "bo", "weakness": "w", "evidence": "", "r": None, "cl": None}]
    )
    jsonschema.validate(data, EXPERT_SCHEMA)
    got = read_object(json.dumps(data), None, ExpertMessage)
    assert got.evidence[0].r == 0.9 and got.challenges[0].r is None


def test_huge_text_fields_are_cut_not_refused() -> None:
    got = read_object(json.dumps(message(text="x" * 100_000)), None, ExpertMessage)
    assert len(got.text) == 20_000


finite = st.floats(0, 1, allow_nan=False)
citation = st.fixed_dictionaries(
    {
        "title": st.text(min_size=1, max_size=20).filter(str.strip),
        "r": finite,
        "cl": finite,
        "load_bearing": st.booleans(),
    }
)


@given(
    st.lists(citation, max_size=5),
    st.sampled_from(["position", "challenge", "response", "final", "pass"]),
)
def test_any_schema_valid_message_is_read(evidence: list[dict[str, Any]], kind: str) -> None:
    got = read_object(json.dumps(message(kind=kind, evidence=evidence)), None, ExpertMessage)
    assert [c.r for c in got.evidence] == [c["r"] for c in evidence]


@given(st.one_of(st.floats(allow_nan=True), st.text(max_size=5), st.none(), st.booleans()))
def test_any_rating_outside_zero_to_one_is_refused(r: Any) -> None:
    data = message(evidence=[{"title": "x", "r": r, "cl": 0.5}])
    try:
        got = read_object(json.dumps(data), None, ExpertMessage)
    except StructuredError:
        return
    assert 0.0 <= got.evidence[0].r <= 1.0


def test_the_synthesis_narrative_needs_a_verdict_and_a_recommendation() -> None:
    with pytest.raises(StructuredError, match="verdict"):
        read_object(
            json.dumps({"status": "partial", "recommendation": "r"}), None, SynthesisNarrative
        )
    got = read_object(
        json.dumps({"status": "consensus", "verdict": "v", "recommendation": "r"}),
        None,
        SynthesisNarrative,
    )
    assert got.progression == [] and got.contested == []
