"""Dollars per million tokens, by model name prefix: how the proxy prices the usage it reads.

The model APIs report tokens, not dollars, so the proxy prices them itself (Claude Code's own
figure comes from a table inside the CLI, and a runner's word is not what a budget should rest
on). List prices at the time of writing; the longest matching prefix wins, and a model nobody
listed is priced at the dearest rate, so an unknown model reaches a cost ceiling early rather
than late. Cache writes cost 1.25× and cache reads 0.1× the input price.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float


PRICES: Mapping[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus": Price(15.0, 75.0),
    "claude-sonnet": Price(3.0, 15.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-haiku-4": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "gpt-5-mini": Price(0.25, 2.0),
    "gpt-5-nano": Price(0.05, 0.4),
    "gpt-5": Price(1.25, 10.0),
    "gpt-4.1": Price(2.0, 8.0),
    "o3": Price(2.0, 8.0),
}
UNKNOWN = Price(15.0, 75.0)
CACHE_WRITE = 1.25
CACHE_READ = 0.1


def price_of(model: str | None, table: Mapping[str, Price] = PRICES) -> Price:
    name = (model or "").lower()
    best = max((p for p in table if name.startswith(p)), key=len, default=None)
    return table[best] if best is not None else UNKNOWN


def cost_usd(
    model: str | None,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
    table: Mapping[str, Price] = PRICES,
) -> float:
    """`input_tokens` excludes the cache tokens, which are priced on their own."""
    price = price_of(model, table)
    per_input = price.input_per_mtok / 1e6
    return (
        input_tokens * per_input
        + cache_write_tokens * per_input * CACHE_WRITE
        + cache_read_tokens * per_input * CACHE_READ
        + output_tokens * price.output_per_mtok / 1e6
    )
