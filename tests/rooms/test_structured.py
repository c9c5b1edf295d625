"""Reading an actor's structured output: the strict schema and the boundary model."""

from __future__ import annotations

import json
from typing import Literal

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from rooms.judge.structured import StructuredError, read_object, strict_schema
from runners.protocol import RunRequest


class Inner(BaseModel):
    title: str
    score: float = Field(ge=0, le=1)


class Outer(BaseModel):
    kind: Literal["a", "b"]
    items: list[Inner] = []
    note: str | None = None


def test_the_strict_schema_inlines_requires_everything_and_allows_nothing_else() -> None:
    schema = strict_schema(Outer)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "$defs" not in json.dumps(schema) and "$ref" not in json.dumps(schema)
    assert schema["required"] == ["kind", "items", "note"]
    assert schema["additionalProperties"] is False
    inner = schema["properties"]["items"]["items"]
    assert inner["required"] == ["title", "score"]  # a property named "title" is kept
    assert inner["additionalProperties"] is False
    RunRequest(role="expert", prompt="p", output_schema=schema)
    valid = {"kind": "a", "items": [{"title": "t", "score": 0.5}], "note": None}
    jsonschema.validate(valid, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**valid, "extra": 1}, schema)


OBJ = {"kind": "a", "items": [{"title": "t", "score": 0.5}]}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(OBJ),
        "Here it is:\n```json\n" + json.dumps(OBJ) + "\n```\nThanks.",
        'draft:\n```json\n{"kind": "b"}\n```\ncorrected:\n```\n' + json.dumps(OBJ) + "\n```",
        '<internal>{"kind": "b"}</internal>\n' + json.dumps(OBJ),
        "My answer is " + json.dumps(OBJ) + " as requested.",
    ],
)
def test_printed_objects_are_read(text: str) -> None:
    got = read_object(text, None, Outer)
    assert got.kind == "a" and got.items[0].score == 0.5


def test_structured_output_wins_over_the_text() -> None:
    assert read_object(json.dumps(OBJ), {"kind": "b"}, Outer).kind == "b"


@pytest.mark.parametrize(
    ("text", "structured", "says"),
    [
        ("no object here", None, "no JSON object"),
        ("{not json}", None, "not valid JSON"),
        ("[1, 2]", None, "no JSON object"),
        (json.dumps({"kind": "c"}), None, "kind"),
        (json.dumps({"kind": "a", "items": [{"title": "t", "score": 2}]}), None, "items.0.score"),
        ("", {"kind": "a", "items": "x"}, "items"),
        ("{" * 300_000, None, "no JSON object"),
        ("{" * 5000 + "}" * 5000, None, "not valid JSON"),
    ],
)
def test_bad_objects_are_refused_saying_what_is_wrong(
    text: str, structured: dict[str, object] | None, says: str
) -> None:
    with pytest.raises(StructuredError, match=says):
        read_object(text, structured, Outer)


@given(st.text(max_size=400))
def test_any_text_reads_or_raises_structured_error(text: str) -> None:
    try:
        got = read_object(text, None, Outer)
    except StructuredError:
        return
    assert got.kind in ("a", "b")


@given(st.sampled_from(["a", "b"]), st.lists(st.floats(0, 1), max_size=4), st.text(max_size=80))
def test_valid_objects_round_trip_through_any_prose(
    kind: str, scores: list[float], prose: str
) -> None:
    obj = {"kind": kind, "items": [{"title": f"t{i}", "score": s} for i, s in enumerate(scores)]}
    text = prose.replace("`", "'").replace("{", "(").replace("}", ")") + "\n" + json.dumps(obj)
    got = read_object(text, None, Outer)
    assert got.kind == kind and [i.score for i in got.items] == scores
