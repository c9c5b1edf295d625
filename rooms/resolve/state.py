"""A resolve run's stored state."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from rooms.resolve.checks import Observation
from rooms.resolve.outputs import DesignedTest, PositionOut

Phase = Literal["positions", "design", "execute", "done", "failed"]


class ResolveState(BaseModel):
    phase: Phase = "positions"
    question: str
    context: str = ""  # what the room said, when the dispute comes from a pair's deadlock
    positions: list[PositionOut] = Field(default_factory=list)
    talk_rounds: int = 0  # rounds of talk (statements of the positions) so far
    talk_request: str = ""  # what the test designer asked the positions to clarify
    tests: list[DesignedTest] = Field(default_factory=list)  # to run
    not_run: list[DesignedTest] = Field(default_factory=list)  # beyond the limit
    results: list[Observation] = Field(default_factory=list)  # what the engine saw the tests do
    attempts: dict[str, int] = Field(default_factory=dict)
    problems: dict[str, str] = Field(default_factory=dict)
    failure: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    participants: list[str] = Field(default_factory=list)
