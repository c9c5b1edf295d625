"""The owner's and reviewer's output schemas and reading a turn's marker from its object or its
text (rooms/judge/turn_objects.py)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from rooms.judge.turn_objects import (
    OWNER_SCHEMA,
    REVIEWER_SCHEMA,
    OwnerTurn,
    ReviewerTurn,
    read_turn,
    schema_for,
)
from runners.protocol import RunRequest
from tests.fakes.turn_objects import finding, review_object, work_object


@pytest.mark.parametrize(
    ("schema", "model"), [(OWNER_SCHEMA, OwnerTurn), (REVIEWER_SCHEMA, ReviewerTurn)]
)
def test_the_schemas_are_strict_and_match_their_models(schema: dict[str, Any], model: Any) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"]) == set(model.model_fields)
    RunRequest(role="reviewer", prompt="p", output_schema=schema)


def test_only_owner_and_reviewer_turns_have_a_schema() -> None:
    assert schema_for("owner") == OWNER_SCHEMA and schema_for("reviewer") == REVIEWER_SCHEMA
    assert schema_for("arbiter") is None


def test_the_fakes_objects_are_valid_under_the_schemas() -> None:
    f = finding("F1", "a.py:3", "off by one")
    jsonschema.validate(review_object("APPROVED", findings=[f]), REVIEWER_SCHEMA)
    jsonschema.validate(work_object("DONE", addressed=["F1"]), OWNER_SCHEMA)


@pytest.mark.parametrize(
    ("role", "text", "structured", "marker", "source"),
    [
        ("reviewer", "", review_object("APPROVED"), "APPROVED", "object"),
        ("reviewer", "", review_object("APPROVED", conditions=["after CI"]), "CHANGES_REQUESTED",
         "object"),
        # A blank condition is no condition.
        ("reviewer", "", review_object("APPROVED", conditions=["  "]), "APPROVED", "object"),
        ("reviewer", "CHANGES_REQUESTED", review_object("APPROVED"), "APPROVED", "object"),
        ("reviewer", "", review_object("BLOCKED"), "BLOCKED", "object"),
        ("reviewer", "APPROVED", {**review_object("APPROVED"), "verdict": "LGTM"}, "APPROVED",
         "text"),
        ("reviewer", "meh", {**review_object("APPROVED"), "findings": [{"id": "F1"}]}, None,
         "text"),
        ("reviewer", "APPROVED", None, "APPROVED", "text"),
        # A runner without a schema may print the object; it is read as the object.
        ("reviewer", "```json\n" + json.dumps(review_object("NEEDS_CONTEXT"))
         + "\n```", None, "NEEDS_CONTEXT", "object"),
        ("owner", "DONE", work_object("BLOCKED"), "BLOCKED", "object"),
        ("owner", "BLOCKED", {"status": "DONE"}, "BLOCKED", "text"),
        ("owner", "", None, None, "text"),
    ],
)  # fmt: skip
def test_reading_a_turn(
    role: Any, text: str, structured: dict[str, Any] | None, marker: str | None, source: str
) -> None:
    reading = read_turn(role, text, structured)
    assert (reading.marker, reading.source) == (marker, source)
    assert (reading.turn is None) == (source == "text")
    assert bool(reading.problem) == (source == "text")
