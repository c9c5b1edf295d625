"""What resolve's actors hand back, checked at the boundary (pydantic), and their strict
schemas: the positions in dispute and the tests designed to tell them apart (each with the
outcome every position predicts). What a test did when it ran is no actor's to say: the engine
runs it and sees (rooms/resolve/checks.py)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rooms.judge.structured import strict_schema

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$")
_TEXT = 20_000
Predicted = Literal["PASS", "FAIL"]
Observed = Literal["PASS", "FAIL", "ERROR"]  # ERROR: the test could not run


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    @field_validator("*", mode="before")
    @classmethod
    def _cut_text(cls, value: object) -> object:
        return value[:_TEXT] if isinstance(value, str) else value


def _an_id(value: str) -> str:
    if not _ID.match(value):
        raise ValueError("an id is 1–16 letters, digits, - or _")
    return value


def _upper(value: object) -> object:
    return value.strip().upper() if isinstance(value, str) else value


class PositionOut(_Out):
    id: str  # A, B, C…
    approach: str = Field(min_length=1)  # what this side claims the code does / should do
    rationale: str = ""

    _check_id = field_validator("id")(_an_id)
    _upper_id = field_validator("id", mode="before")(_upper)


class Positions(_Out):
    positions: list[PositionOut]


class Prediction(_Out):
    position: str
    outcome: Predicted

    _upper_position = field_validator("position", "outcome", mode="before")(_upper)


class DesignedTest(_Out):
    id: str  # T1, T2…
    name: str = Field(min_length=1)
    claim: str = ""  # the contested claim it tests
    command: str = Field(min_length=1)  # how to run it in the workspace
    predictions: list[Prediction]

    _check_id = field_validator("id")(_an_id)
    _upper_id = field_validator("id", mode="before")(_upper)


class Design(_Out):
    tests: list[DesignedTest]
    talk: str = ""  # when no test could be designed: what the positions must clarify first


POSITIONS_SCHEMA = strict_schema(Positions)
TESTS_SCHEMA = strict_schema(Design)
