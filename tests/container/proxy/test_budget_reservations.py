"""Parallel requests against a budget (container/proxy/grants.py): what a request may cost is
reserved before it is forwarded, so 40 requests at once with 1,000 tokens left are not 40
forwarded requests; and a turn's requests in flight are capped, as are all turns'."""

from __future__ import annotations

import asyncio

import anthropic
import pytest

from container.proxy import CredentialProxy, Upstream
from container.proxy.limits import ProxyLimits
from tests.container.proxy.conftest import ANTHROPIC_KEY
from tests.container.proxy.upstreams import Crowd, serving
from tests.fakes import messages_api as m
from tests.fakes.messages_api import FakeMessagesAPI

pytestmark = pytest.mark.timeout(60)
USER = [{"role": "user", "content": "hi"}]
LONG = [{"role": "user", "content": "word " * 480}]


async def test_forty_parallel_requests_overshoot_by_one_request_at_most(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    """Each request sends ~2,400 bytes (~600 tokens in) and asks for 200 out; each answer costs
    800 tokens; 1,000 are left. Before: all 40 were forwarded (32,000 tokens spent). Now the
    first is forwarded alone (another's reservation would not fit beside its own), the second
    once it has settled (200 tokens were left), and the other 38 are refused for the budget."""
    messages_api.script(
        m.any_request(), [m.slow(m.text("one", usage=m.Usage(600, 200)), 0.3)], repeat_last=True
    )
    grant = proxy.issue("claude", tokens_left=1000)
    client = anthropic.AsyncAnthropic(api_key=grant.token, base_url=proxy.tcp_url, max_retries=0)
    calls = [
        client.messages.create(model="claude-sonnet-4-5", max_tokens=200, messages=LONG)
        for _ in range(40)
    ]
    results = await asyncio.gather(*calls, return_exceptions=True)
    answered = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, anthropic.BadRequestError)]
    assert len(answered) + len(refused) == 40
    assert proxy.forwarded == len(messages_api.calls) == len(answered) == 2
    assert all("token budget is spent" in str(r) for r in refused)
    assert grant.spent.tokens == 1600  # over by the one request forwarded with 200 left
    assert (grant.in_flight, grant.reserved.tokens) == (0, 0)


async def test_a_cost_budget_reserves_too(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    """$0.01 left; each request may cost 1,000 output tokens of sonnet ($0.015): one at a time."""
    messages_api.script(
        m.any_request(), [m.slow(m.text("one", usage=m.Usage(10, 700)), 0.3)], repeat_last=True
    )
    grant = proxy.issue("claude", usd_left=0.01)
    client = anthropic.AsyncAnthropic(api_key=grant.token, base_url=proxy.tcp_url, max_retries=0)
    calls = [
        client.messages.create(model="claude-sonnet-4-5", max_tokens=1000, messages=USER)
        for _ in range(10)
    ]
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert len(messages_api.calls) == 1  # $0.01053 spent after the first: the rest refused
    assert sum(isinstance(r, anthropic.BadRequestError) for r in results) == 9


async def test_requests_in_flight_are_capped_per_turn_and_in_all() -> None:
    """20 requests of one turn reach the upstream 4 at a time (max_in_flight_per_run); with a
    second turn sending 20 too, the upstream never has more than 6 (max_in_flight). None is
    refused: the others wait."""
    crowd = Crowd()
    async with serving(crowd.app()) as url:
        limits = ProxyLimits(max_in_flight=6, max_in_flight_per_run=4)
        proxy = CredentialProxy({"claude": Upstream(url, ANTHROPIC_KEY)}, limits=limits)
        await proxy.listen_tcp()
        try:
            calls = []
            for _ in range(2):
                grant = proxy.issue("claude")
                client = anthropic.AsyncAnthropic(
                    api_key=grant.token, base_url=proxy.tcp_url, max_retries=0
                )
                calls += [
                    client.messages.create(model="m", max_tokens=5, messages=USER)
                    for _ in range(20)
                ]
            running = asyncio.gather(*calls)
            while crowd.now < 6:
                await asyncio.sleep(0.01)
            crowd.release.set()
            await running
        finally:
            crowd.release.set()
            await proxy.close()
    assert crowd.seen == 40 and crowd.most == 6
