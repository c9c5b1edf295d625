"""In-process references for rooms tests: each answers after a (virtual or real) delay, or
fails, and records when it was asked. The SDK-backed ones are tested against the fake APIs in
tests/bot/references/."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from rooms.references.port import Answer, ReferenceFailed


@dataclass
class FakeReference:
    name: str
    model: str
    answer: str = "VERDICT: PROCEED\nthe work stands"
    delay_s: float = 0.0
    timeout_s: float = 5.0
    fail: str | None = None  # raise ReferenceFailed with this message
    crash: bool = False  # raise something unexpected
    tokens: tuple[int, int] = (120, 30)
    cost_usd: float = 0.001
    prompts: list[str] = field(default_factory=list)
    in_flight: list[int] = field(default_factory=lambda: [0, 0])  # [now, most] (`panel_of`)

    async def ask(self, prompt: str, *, timeout: float) -> Answer:
        self.prompts.append(prompt)
        self.in_flight[0] += 1
        self.in_flight[1] = max(self.in_flight[1], self.in_flight[0])
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight[0] -= 1
        if self.crash:
            raise RuntimeError("boom")
        if self.fail is not None:
            raise ReferenceFailed(self.fail)
        return Answer(self.answer, *self.tokens, self.cost_usd)


def panel_of(*refs: FakeReference) -> list[FakeReference]:
    """The references sharing one in-flight counter: [now, most at once]."""
    counter = [0, 0]
    for ref in refs:
        ref.in_flight = counter
    return list(refs)


@dataclass
class StaticReferences:
    """rooms.references.port.ReferencePool: the same references for every group."""

    refs: Sequence[FakeReference] = ()

    def for_group(self, group: str) -> Sequence[FakeReference]:
        return self.refs
