"""The port through which the tribunal asks a reference model (DESIGN §1: `rooms/` never imports
a model SDK; `bot/references/` fills this in with the official anthropic and openai clients)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

REFERENCE_APIS = ("anthropic", "openai-chat", "openai-responses")


@dataclass(frozen=True)
class Answer:
    """What a reference said, and what it cost. Latency is measured by the caller."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class ReferenceFailed(Exception):
    """A reference that could not answer (HTTP error, refused, empty). The message is recorded,
    so it must not carry a key."""


class Reference(Protocol):
    """One configured reference model. `name` and `model` are for people and records only: they
    never reach the arbiter's prompt."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def timeout_s(self) -> float: ...

    async def ask(self, prompt: str, *, timeout: float) -> Answer:
        """The reference's answer to `prompt`; ReferenceFailed when it has none."""
        ...


class ReferencePool(Protocol):
    """The references of each group."""

    def for_group(self, group: str) -> Sequence[Reference]: ...


class NoReferences:
    def for_group(self, group: str) -> Sequence[Reference]:
        return ()
