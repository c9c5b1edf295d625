"""The credential proxy with the real anthropic and openai SDKs against the fake model APIs: the
token is swapped for the key, answers stream through, usage is read, and everything that is not
a live token on a model API path is refused with nothing forwarded."""

from __future__ import annotations

import asyncio

import aiohttp
import anthropic
import openai
import pytest
from aiohttp import web

from container.proxy import CredentialProxy, Upstream
from tests.container.proxy.conftest import ANTHROPIC_KEY, OPENAI_KEY
from tests.fakes import messages_api as m
from tests.fakes import responses_api as r
from tests.fakes.messages_api import FakeMessagesAPI
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = pytest.mark.timeout(30)
USER = [{"role": "user", "content": "hi"}]


def claude(proxy: CredentialProxy, token: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key=token, base_url=proxy.tcp_url, max_retries=0)


def codex(proxy: CredentialProxy, token: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key=token, base_url=f"{proxy.tcp_url}/v1", max_retries=0)


async def test_anthropic_stream_gets_the_key_and_counts_usage(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    messages_api.script(
        m.any_request(),
        [m.text("hello through the proxy", usage=m.Usage(120, 30, cache_read_input_tokens=400))],
    )
    grant = proxy.issue("claude")
    async with claude(proxy, grant.token).messages.stream(
        model="claude-sonnet-4-5", max_tokens=100, messages=USER
    ) as stream:
        text = "".join([chunk async for chunk in stream.text_stream])
    assert text == "hello through the proxy"
    (call,) = messages_api.calls
    assert call.headers["x-api-key"] == ANTHROPIC_KEY
    assert grant.token not in str(call.headers) and "authorization" not in call.headers
    assert (grant.spent.input_tokens, grant.spent.output_tokens) == (520, 30)
    # sonnet: $3 in, $15 out per Mtok; cache reads at a tenth of the input price
    expected = (120 * 3 + 400 * 0.3 + 30 * 15) / 1e6
    assert grant.spent.cost_usd == pytest.approx(expected)


async def test_anthropic_json_answer_and_bearer_token(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    messages_api.script(m.any_request(), [m.text("plain", usage=m.Usage(10, 4))])
    grant = proxy.issue("claude")
    client = anthropic.AsyncAnthropic(auth_token=grant.token, base_url=proxy.tcp_url, max_retries=0)
    message = await client.messages.create(model="claude-x", max_tokens=10, messages=USER)
    assert message.content[0].type == "text" and message.content[0].text == "plain"
    assert messages_api.calls[0].headers["x-api-key"] == ANTHROPIC_KEY
    assert (grant.spent.input_tokens, grant.spent.output_tokens) == (10, 4)


async def test_openai_responses_stream_and_json(
    proxy: CredentialProxy, responses_api: FakeResponsesAPI
) -> None:
    responses_api.script(
        r.any_request(),
        [
            r.text("streamed", usage=r.Usage(200, 20, cached_tokens=50)),
            r.text("whole", usage=r.Usage(7, 3)),
        ],
    )
    grant = proxy.issue("codex")
    client = codex(proxy, grant.token)
    stream = await client.responses.create(model="gpt-5", input="hi", stream=True)
    deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "streamed"
    whole = await client.responses.create(model="gpt-5", input="hi")
    assert whole.output_text == "whole"
    assert [c.headers["authorization"] for c in responses_api.calls] == [f"Bearer {OPENAI_KEY}"] * 2
    assert (grant.spent.input_tokens, grant.spent.output_tokens) == (207, 23)
    # gpt-5: $1.25 in, $10 out per Mtok; the 50 cached tokens at a tenth
    expected = (150 * 1.25 + 50 * 0.125 + 20 * 10 + 7 * 1.25 + 3 * 10) / 1e6
    assert grant.spent.cost_usd == pytest.approx(expected)


@pytest.mark.parametrize("token", ["", "nope", "tribunal-run-guessed", ANTHROPIC_KEY])
async def test_a_wrong_token_is_refused_and_nothing_forwarded(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, token: str
) -> None:
    proxy.issue("claude")  # a live grant exists, but not with this token
    with pytest.raises(anthropic.AuthenticationError):
        await claude(proxy, token or "x").messages.create(model="m", max_tokens=5, messages=USER)
    assert messages_api.requests == [] and proxy.forwarded == 0


async def test_a_replayed_token_stops_working_when_the_turn_ends(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    grant = proxy.issue("claude")
    client = claude(proxy, grant.token)
    await client.messages.create(model="m", max_tokens=5, messages=USER)
    proxy.revoke(grant)
    with pytest.raises(anthropic.AuthenticationError):
        await client.messages.create(model="m", max_tokens=5, messages=USER)
    assert len(messages_api.requests) == 1


async def test_a_token_opens_only_its_own_agents_api(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, responses_api: FakeResponsesAPI
) -> None:
    claude_grant, codex_grant = proxy.issue("claude"), proxy.issue("codex")
    with pytest.raises(openai.AuthenticationError):
        await codex(proxy, claude_grant.token).responses.create(model="gpt-5", input="hi")
    with pytest.raises(anthropic.AuthenticationError):
        await claude(proxy, codex_grant.token).messages.create(
            model="m", max_tokens=5, messages=USER
        )
    assert messages_api.requests == [] and responses_api.requests == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/messages"),
        ("POST", "/v1/complete"),
        ("GET", "/v1/files"),
        ("POST", "/v1/messages/batches"),
        ("DELETE", "/v1/responses"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/"),
        ("POST", "/v1/messages/../../admin"),
        ("CONNECT", "/"),
    ],
)
async def test_paths_that_are_not_the_model_apis_get_404(
    proxy: CredentialProxy,
    messages_api: FakeMessagesAPI,
    responses_api: FakeResponsesAPI,
    method: str,
    path: str,
) -> None:
    grant = proxy.issue("claude")
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, f"{proxy.tcp_url}{path}", headers={"x-api-key": grant.token}, data=b"{}"
        ) as answer,
    ):
        assert answer.status == 404
    assert messages_api.requests == [] and responses_api.requests == []


async def test_another_host_in_the_request_is_ignored(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    """A client that treats the proxy as an HTTP proxy (absolute URL, another Host) still only
    reaches the configured upstream."""
    elsewhere: list[str] = []

    async def record(request: web.Request) -> web.Response:
        elsewhere.append(request.path)
        return web.Response(text="reached")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    grant = proxy.issue("claude")
    try:
        async with aiohttp.ClientSession() as session:
            async with session.post(
                f"http://127.0.0.1:{port}/v1/messages",
                proxy=proxy.tcp_url,
                headers={"x-api-key": grant.token},
                json={"model": "m", "max_tokens": 5, "messages": USER},
            ) as answer:
                assert answer.status == 200
            async with session.post(
                f"{proxy.tcp_url}/v1/messages",
                headers={"x-api-key": grant.token, "host": f"127.0.0.1:{port}"},
                json={"model": "m", "max_tokens": 5, "messages": USER},
            ) as answer:
                assert answer.status == 200
    finally:
        await runner.cleanup()
    assert elsewhere == [] and len(messages_api.calls) == 2


async def test_a_spent_budget_refuses_the_next_request(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    messages_api.script(m.any_request(), [m.text("one", usage=m.Usage(800, 300))])
    grant = proxy.issue("claude", tokens_left=1000)
    client = claude(proxy, grant.token)
    await client.messages.create(model="m", max_tokens=5, messages=USER)  # 1100 ≥ 1000 now
    assert not grant.refused.is_set()
    with pytest.raises(anthropic.BadRequestError) as caught:
        await client.messages.create(model="m", max_tokens=5, messages=USER)
    said = str(caught.value)
    assert "token budget is spent" in said and "1,100 of the 1,000" in said
    assert grant.refused.is_set() and grant.refusal is not None
    assert len(messages_api.calls) == 1


async def test_a_spent_cost_budget_refuses_too(
    proxy: CredentialProxy, responses_api: FakeResponsesAPI
) -> None:
    responses_api.script(r.any_request(), [r.text("pricey", usage=r.Usage(100_000, 10_000))])
    grant = proxy.issue("codex", usd_left=0.2)  # gpt-5: $0.125 + $0.10 for the first answer
    client = codex(proxy, grant.token)
    await client.responses.create(model="gpt-5", input="hi")
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="gpt-5", input="hi")
    assert "cost budget is spent" in str(caught.value)
    assert len(responses_api.calls) == 1


async def test_revoking_cuts_a_request_in_flight(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    messages_api.script(m.any_request(), [m.slow(m.text("late"), 5)])
    grant = proxy.issue("claude")
    call = asyncio.ensure_future(
        claude(proxy, grant.token).messages.create(model="m", max_tokens=5, messages=USER)
    )
    for _ in range(100):
        if messages_api.requests:
            break
        await asyncio.sleep(0.02)
    proxy.revoke(grant)
    with pytest.raises(anthropic.APIConnectionError):
        await asyncio.wait_for(call, 3)


async def test_events_pass_through_unbuffered() -> None:
    """The first event reaches the client while the upstream still holds back the rest."""
    release = asyncio.Event()

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b'event: first\ndata: {"type": "ping"}\n\n')
        await release.wait()
        await response.write(b'event: second\ndata: {"type": "ping"}\n\n')
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/messages", stream)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    upstream = f"http://127.0.0.1:{runner.addresses[0][1]}"
    proxy = CredentialProxy({"claude": Upstream(upstream, ANTHROPIC_KEY)})
    await proxy.listen_tcp()
    grant = proxy.issue("claude")
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{proxy.tcp_url}/v1/messages", headers={"x-api-key": grant.token}, data=b"{}"
            ) as answer,
        ):
            first = await asyncio.wait_for(answer.content.readuntil(b"\n\n"), 2)
            assert b"event: first" in first
            release.set()
            rest = await asyncio.wait_for(answer.content.read(), 2)
            assert b"event: second" in rest
    finally:
        release.set()
        await proxy.close()
        await runner.cleanup()


async def test_an_unreachable_upstream_is_a_502_in_the_apis_format() -> None:
    proxy = CredentialProxy({"claude": Upstream("http://127.0.0.1:9", ANTHROPIC_KEY)})
    await proxy.listen_tcp()
    grant = proxy.issue("claude")
    try:
        with pytest.raises(anthropic.InternalServerError) as caught:
            await claude(proxy, grant.token).messages.create(model="m", max_tokens=5, messages=USER)
        assert "upstream unreachable" in str(caught.value)
    finally:
        await proxy.close()


async def test_a_stopped_proxy_cuts_every_turn(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    """The proxy lives and dies with the bot: when it stops, a turn still streaming loses its
    way to the model, and nothing more gets through."""
    messages_api.script(m.any_request(), [m.slow(m.text("late"), 5)])
    grant = proxy.issue("claude")
    client = claude(proxy, grant.token)
    call = asyncio.ensure_future(client.messages.create(model="m", max_tokens=5, messages=USER))
    for _ in range(100):
        if messages_api.requests:
            break
        await asyncio.sleep(0.02)
    await proxy.close()
    with pytest.raises(anthropic.APIConnectionError):
        await asyncio.wait_for(call, 3)
    with pytest.raises(anthropic.APIConnectionError):
        await client.messages.create(model="m", max_tokens=5, messages=USER)


async def test_a_live_token_of_an_agent_type_without_credential_is_told_so(
    responses_api: FakeResponsesAPI,
) -> None:
    """Issue 27 #1: no upstream for claude (no key, no base URL) is not "invalid run token"."""
    proxy = CredentialProxy({"codex": Upstream(responses_api.base_url, OPENAI_KEY)})
    await proxy.listen_tcp()
    grant = proxy.issue("claude")
    try:
        with pytest.raises(anthropic.AuthenticationError) as caught:
            await claude(proxy, grant.token).messages.create(model="m", max_tokens=5, messages=USER)
        assert "the bot has no model credential for claude" in str(caught.value)
        assert "invalid run token" not in str(caught.value)
    finally:
        await proxy.close()
