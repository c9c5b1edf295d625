"""Asking the references (DESIGN §5): all at once, each within its own timeout and all within
the fan-out's deadline; a reference that fails or is late is dropped and recorded, never waited
for. The order they are shown in is a shuffle of the configured list by a seed drawn per
arbitration and stored, so a record can be replayed and no model is always first.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rooms.references.port import Answer, Reference, ReferenceFailed
from rooms.references.tally import Tally, read_verdict, tally

_ERROR_CHARS = 300  # of a failure's message in the record
SEED_BITS = 53  # fits SQLite's INTEGER and JSON numbers alike


def new_seed() -> int:
    return random.SystemRandom().getrandbits(SEED_BITS)


def shuffled(items: Sequence[Reference], seed: int) -> list[Reference]:
    order = list(items)
    random.Random(seed).shuffle(order)
    return order


def label(index: int) -> str:
    """The neutral label of the index-th answer shown (0-based): R1, R2, …"""
    return f"R{index + 1}"


@dataclass(frozen=True)
class Opinion:
    """One reference's part in a fan-out, answered or not. `label` is "" for a dropped one."""

    position: int  # in the seeded order
    label: str
    name: str
    model: str
    text: str = ""
    verdict: str | None = None
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0

    @property
    def answered(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Panel:
    """The outcome of one fan-out."""

    seed: int
    opinions: tuple[Opinion, ...] = ()
    wall_s: float = 0.0

    @property
    def answered(self) -> list[Opinion]:
        return [o for o in self.opinions if o.answered]

    @property
    def dropped(self) -> list[Opinion]:
        return [o for o in self.opinions if not o.answered]

    @property
    def labels(self) -> list[str]:
        return [o.label for o in self.answered]

    @property
    def tally(self) -> Tally:
        return tally([o.verdict for o in self.answered])


async def consult(
    references: Sequence[Reference],
    prompt: str,
    *,
    seed: int,
    deadline_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> Panel:
    """Ask every reference in parallel. Never raises for a reference's failure."""
    order = shuffled(references, seed)
    started = clock()
    calls = [asyncio.ensure_future(_ask(ref, prompt, clock)) for ref in order]
    if calls:
        _, late = await asyncio.wait(calls, timeout=deadline_s)
        for call in late:
            call.cancel()
        await asyncio.gather(*late, return_exceptions=True)
    wall = clock() - started
    opinions, shown = [], 0
    for position, (ref, call) in enumerate(zip(order, calls, strict=True)):
        if call.cancelled():
            result: Answer | str = f"dropped: not answered within the {deadline_s:g} s deadline"
            latency = wall
        else:
            result, latency = call.result()
        if isinstance(result, str):
            opinions.append(
                Opinion(position, "", ref.name, ref.model, error=result, latency_s=latency)
            )
            continue
        opinions.append(
            Opinion(
                position,
                label(shown),
                ref.name,
                ref.model,
                text=result.text,
                verdict=read_verdict(result.text),
                input_tokens=result.input_tokens,
                output_tokens=result.output_tokens,
                cost_usd=result.cost_usd,
                latency_s=latency,
            )
        )
        shown += 1
    return Panel(seed, tuple(opinions), wall)


async def _ask(
    ref: Reference, prompt: str, clock: Callable[[], float]
) -> tuple[Answer | str, float]:
    """The answer, or why there is none, and how long it took."""
    started = clock()
    try:
        async with asyncio.timeout(ref.timeout_s):
            answer = await ref.ask(prompt, timeout=ref.timeout_s)
        if not answer.text.strip():
            raise ReferenceFailed("empty answer")
        result: Answer | str = answer
    except TimeoutError:
        result = f"timed out after {ref.timeout_s:g} s"
    except ReferenceFailed as exc:
        result = _short(str(exc))
    except Exception as exc:  # a reference must never break the ruling
        result = _short(f"{type(exc).__name__}: {exc}")
    return result, clock() - started


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"
