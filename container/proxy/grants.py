"""Run tokens: what a turn holds instead of a model key, and what it has spent.

A `Grant` is issued when a turn starts and revoked when it ends. Its token is a fresh random
string (256 bits), valid only for the grant's agent type (a Claude token opens the Messages API
only, a Codex token the Responses API only) and only until revoked; a revoked token is
forgotten, so replaying it is the same as presenting a token that never existed. The grant
counts the usage the model API reported for the turn's requests and holds the turn's budget:
the task's tokens and dollars left when the turn started.

Budget reservations keep parallel requests from spending the budget many times over: before a
request is forwarded, what it may cost (its output limit and an estimate of its input:
container/proxy/limits.py) is reserved, and it is settled (the reservation released, the usage
counted) when its answer ends. A request is forwarded only when the budget is not spent and
either nothing else of the turn is in flight or its reservation fits beside the others'; else it
waits for one of them to settle. A request forwarded alone may still pass the budget: the
overshoot is bounded by one request. A grant also holds `slots`, its requests handled at once
(`max_in_flight_per_run`): one more waits before its body is read. It also keeps the model's
newest answer (container/proxy/answers.py), which the turn's final answer must be.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field

from container.proxy.answers import AnswerLog
from runners.protocol import ModelAgent

TOKEN_PREFIX = "tribunal-run-"


@dataclass
class Spent:
    """Usage the API reported: tokens in (cache reads and writes included), tokens out, dollars."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Spent) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd

    def minus(self, other: Spent) -> Spent:
        return Spent(
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            self.cost_usd - other.cost_usd,
        )


@dataclass
class Grant:
    agent: ModelAgent
    label: str  # for logs: group/role/task/turn
    tokens_left: int | None = None  # None: no ceiling
    usd_left: float | None = None
    server_tools: bool = False  # the group lets the model API's server tools through
    token: str = field(default_factory=lambda: TOKEN_PREFIX + secrets.token_urlsafe(32))
    spent: Spent = field(default_factory=Spent)
    requests: int = 0
    refusal: str | None = None  # why a request was refused for the budget
    refused: asyncio.Event = field(default_factory=asyncio.Event)
    reserved: Spent = field(default_factory=Spent)  # what the requests in flight may cost
    in_flight: int = 0  # requests forwarded and not yet settled
    slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(8))
    _settled: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    # The model's newest answer, read from the relayed bytes: a turn's final must be it.
    answers: AnswerLog = field(default_factory=AnswerLog)

    def over_budget(self) -> str | None:
        """Why the next request would pass the turn's budget, or None."""
        if self.tokens_left is not None and self.spent.tokens >= self.tokens_left:
            return (
                f"the task's token budget is spent: this turn used {self.spent.tokens:,} of the "
                f"{self.tokens_left:,} tokens left"
            )
        if self.usd_left is not None and self.spent.cost_usd >= self.usd_left:
            return (
                f"the task's cost budget is spent: this turn used ${self.spent.cost_usd:.4f} of "
                f"the ${self.usd_left:.4f} left"
            )
        return None

    def _fits(self, want: Spent) -> bool:
        if self.in_flight == 0:
            return True  # alone: may pass the budget, by this one request at most
        tokens = self.spent.tokens + self.reserved.tokens + want.tokens
        usd = self.spent.cost_usd + self.reserved.cost_usd + want.cost_usd
        return (self.tokens_left is None or tokens <= self.tokens_left) and (
            self.usd_left is None or usd <= self.usd_left
        )

    async def reserve(self, want: Spent) -> str | None:
        """Wait until a request that may cost `want` can be forwarded and reserve it; or the
        reason it cannot be (the budget is spent), reserving nothing."""
        while True:
            reason = self.over_budget()
            if reason is not None:
                return reason
            if self._fits(want):
                self.reserved.add(want)
                self.in_flight += 1
                return None
            settled = self._settled
            await settled.wait()

    def settle(self, want: Spent, used: Spent) -> None:
        """A request reserved with `want` has ended having cost `used`."""
        self.reserved = self.reserved.minus(want)
        self.in_flight -= 1
        self.spent.add(used)
        self._settled.set()
        self._settled = asyncio.Event()

    def refuse(self, reason: str) -> None:
        if self.refusal is None:
            self.refusal = reason
        self.refused.set()


class Grants:
    """The live grants of one proxy, by token; each handles `per_run` requests at once."""

    def __init__(self, per_run: int = 8) -> None:
        self.per_run = per_run
        self._live: dict[str, Grant] = {}

    def issue(
        self,
        agent: ModelAgent,
        label: str = "",
        *,
        tokens_left: int | None = None,
        usd_left: float | None = None,
        server_tools: bool = False,
    ) -> Grant:
        grant = Grant(agent, label, tokens_left, usd_left, server_tools)
        grant.slots = asyncio.Semaphore(self.per_run)
        self._live[grant.token] = grant
        return grant

    def revoke(self, grant: Grant) -> None:
        self._live.pop(grant.token, None)

    def find(self, token: str | None) -> Grant | None:
        if not token or not token.startswith(TOKEN_PREFIX):
            return None
        return self._live.get(token)

    def __len__(self) -> int:
        return len(self._live)
