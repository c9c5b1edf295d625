"""Structured outputs of the deliberation actors: a strict JSON schema made from a pydantic
model, and reading that model back from a run's output.

A runner that enforces an output schema hands back `structured`; one that does not prints the
object, bare or in a fenced block, often after some prose. Either way the object is validated by
the pydantic model at this boundary: anything that is not a valid object of the model is a
`StructuredError` that says what is wrong (the protocol asks again once, or fails the step) —
never a half-read object.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rooms.base.markers import classify_lines

M = TypeVar("M", bound=BaseModel)

MAX_OBJECT_CHARS = 200_000  # an actor's object is a few KiB; anything far larger is not one
_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(?P<body>.*?)\n[ \t]*```", re.DOTALL)
# Keywords strict structured-output APIs reject or that only bloat the prompt.
_DROPPED = ("title", "default", "examples")


class StructuredError(ValueError):
    """An output that is not a valid object of the expected kind; the message says why."""


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema as strict structured-output APIs want it: references inlined,
    every property required, no other property allowed (fields that do not apply are sent
    empty, as the ruling schema does)."""
    raw = model.model_json_schema()
    defs: dict[str, Any] = raw.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            name = str(node["$ref"]).rsplit("/", 1)[-1]
            return walk(copy.deepcopy(defs[name]))
        out = {k: walk(v) for k, v in node.items() if k not in _DROPPED}
        if isinstance(node.get("properties"), dict):  # property names are not keywords
            out["properties"] = {k: walk(v) for k, v in node["properties"].items()}
        if out.get("type") == "object" and "properties" in out:
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        return out

    schema: dict[str, Any] = walk(raw)
    return schema


def read_object(text: str, structured: dict[str, Any] | None, model: type[M]) -> M:
    """The `model` object in a run's output. Raises `StructuredError` saying what is wrong."""
    if isinstance(structured, dict):
        return _validate(structured, model)
    candidates = _candidates(text if isinstance(text, str) else "")
    if not candidates:
        raise StructuredError(f"no JSON object found (expected a {_name(model)})")
    problem = ""
    # The last object wins: an actor that drafts and then corrects itself means the correction.
    for body in reversed(candidates):
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:
            problem = problem or f"not valid JSON: {exc}"
            continue
        if not isinstance(data, dict):
            problem = problem or "the JSON is not an object"
            continue
        return _validate(data, model)
    raise StructuredError(problem)


def _candidates(text: str) -> list[str]:
    """Fenced blocks first; else the whole visible text when it is one object. `<internal>`
    notes are not output."""
    visible = "\n".join(line for line, kind in classify_lines(text) if kind != "internal").strip()
    if len(visible) > MAX_OBJECT_CHARS:
        return []
    fenced = [m.group("body").strip() for m in _FENCE.finditer(visible)]
    objects = [body for body in fenced if body.startswith("{") and body.endswith("}")]
    if objects:
        return objects
    start, end = visible.find("{"), visible.rfind("}")
    if start == -1 or end < start:
        return []
    return [visible[start : end + 1]]


def _validate(data: dict[str, Any], model: type[M]) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the object"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise StructuredError(f"{where}: {first['msg']}{more}") from None


def _name(model: type[BaseModel]) -> str:
    return model.__name__
