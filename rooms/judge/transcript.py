"""Transcript files: a recorded room as JSON (DESIGN §10), for `tribunal replay` and for tests.

    {"task": "text", "turns": [{"role": "owner|reviewer|arbiter|human", "text": "…",
      "tree": "optional workspace tree hash", "structured": {optional: the turn's object}}]}

`structured` is an owner's or reviewer's output object as the store keeps it (DESIGN §3
"Structured turns"): replay reads the marker from it first, as the engine does, and from the
text when it is missing or invalid.

`load_transcript` either returns a valid `Transcript` or raises `TranscriptError` with a message
a person can act on: which file, where, and what is wrong. Unknown keys are refused rather than
ignored, so a misspelt "tree" does not silently replay without its hashes.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rooms.base.words import SPEAKERS, Speaker

TranscriptRole = Speaker
ROLES: tuple[str, ...] = SPEAKERS
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024


class TranscriptError(ValueError):
    """The file is not a valid transcript; the message says why."""


class TranscriptTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: TranscriptRole
    text: str
    tree: str | None = None
    structured: dict[str, Any] | None = None


class Transcript(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    turns: list[TranscriptTurn]


def read_bounded(path: str) -> bytes:
    """A replay input file's bytes (a transcript, recorded judgments), refused with a clear
    error when it cannot be read or is larger than MAX_TRANSCRIPT_BYTES."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_TRANSCRIPT_BYTES + 1)
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read the file: {exc.strerror or exc}") from None
    if len(raw) > MAX_TRANSCRIPT_BYTES:
        raise TranscriptError(f"{path}: larger than {MAX_TRANSCRIPT_BYTES >> 20} MiB")
    return raw


def load_transcript(path: str) -> Transcript:
    """Read and check a transcript file."""
    raw = read_bounded(path)
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None
    return parse_transcript(content, source=path)


def parse_transcript(content: str, *, source: str = "transcript") -> Transcript:
    """Check a transcript given as JSON text."""
    if not content.strip():
        raise TranscriptError(f'{source}: the file is empty; expected {{"task": …, "turns": […]}}')
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            f"{source}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise TranscriptError(f"{source}: not a transcript: JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise TranscriptError(f"{source}: not a transcript: {exc}") from None
    if not isinstance(data, dict):
        raise TranscriptError(
            f'{source}: expected a JSON object {{"task": …, "turns": […]}}, '
            f"found {_json_type(data)}"
        )
    try:
        return Transcript.model_validate(data)
    except ValidationError as exc:
        raise TranscriptError(f"{source}: {_explain(exc, data)}") from None


def _explain(exc: ValidationError, data: dict[str, Any]) -> str:
    """The first few validation problems in words, each with where it is."""
    problems = [_problem(error, data) for error in exc.errors()]
    unique = list(dict.fromkeys(problems))
    more = f" (and {len(unique) - 3} more problems)" if len(unique) > 3 else ""
    return "; ".join(unique[:3]) + more


def _problem(error: Any, data: dict[str, Any]) -> str:
    loc: tuple[Any, ...] = tuple(error["loc"])
    where = _where(loc)
    kind = error["type"]
    if kind == "missing":
        return f'missing "{loc[-1]}"' + (f" in {_where(loc[:-1])}" if len(loc) > 1 else "")
    if kind == "extra_forbidden":
        return f'unknown key "{loc[-1]}"' + (f" in {_where(loc[:-1])}" if len(loc) > 1 else "")
    if kind == "literal_error" and loc[-1] == "role":
        role = _lookup(data, loc)
        return f"{where}: unknown role {json.dumps(role)} (expected one of {', '.join(ROLES)})"
    found = _json_type(_lookup(data, loc))
    expected = {
        "string_type": "a string",
        "list_type": "a list of turns",
        "model_type": "an object with role and text",
        "model_attributes_type": "an object with role and text",
    }.get(kind)
    if expected is not None:
        return f"{where} must be {expected}, found {found}"
    return f"{where}: {error['msg']}"


def _where(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the transcript"


def _lookup(data: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"
