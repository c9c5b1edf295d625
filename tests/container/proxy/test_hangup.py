"""A runner that hangs up mid-answer (container/proxy/usage.py): the answer's final usage never
passes the proxy, so it is charged what was relayed, for both APIs. Before: Claude 10 input + 1
output token after 32 relayed deltas, Codex nothing."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from container.proxy import CredentialProxy, Grant, Upstream
from tests.container.proxy.conftest import ANTHROPIC_KEY, OPENAI_KEY
from tests.container.proxy.upstreams import HeldStream, serving

pytestmark = pytest.mark.timeout(60)
PIECE = "all work and no play " * 3  # 63 bytes of model text per delta
DELTAS = 32

ANTHROPIC_STREAM = HeldStream(
    head=[
        {
            "type": "message_start",
            "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [], "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ],
    delta={"type": "content_block_delta", "index": 0,
           "delta": {"type": "text_delta", "text": PIECE}},
    deltas=DELTAS,
)  # fmt: skip
OPENAI_STREAM = HeldStream(
    head=[{"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5"}}],
    delta={"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
           "content_index": 0, "delta": PIECE},
    deltas=DELTAS,
)  # fmt: skip


async def hang_up_after(url: str, token: str, body: dict[str, object], events: int) -> None:
    """Read `events` server-sent events of the answer, then close the connection."""
    headers = {"authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as session:
        answer = await session.post(url, json=body, headers=headers)
        seen = 0
        while seen < events:
            line = await answer.content.readline()
            assert line, "the answer ended early"
            seen += line.startswith(b"data:")
        answer.close()  # the runner hangs up


async def settled(proxy: CredentialProxy, grant: Grant, stream: HeldStream) -> None:
    """Wait until the proxy is done with the request: let the upstream go on (a proxy that
    did not notice the hang-up finds out on its next write)."""
    stream.release.set()
    while proxy._inflight.get(grant.token):
        await asyncio.sleep(0.01)


@pytest.mark.parametrize(
    ("agent", "stream", "path", "body"),
    [
        ("claude", ANTHROPIC_STREAM, "/v1/messages",
         {"model": "claude-sonnet-4-5", "max_tokens": 4000, "stream": True,
          "messages": [{"role": "user", "content": "hi"}]}),
        ("codex", OPENAI_STREAM, "/v1/responses",
         {"model": "gpt-5", "stream": True, "input": "hi " * 400}),
    ],
)  # fmt: skip
async def test_hanging_up_mid_answer_is_charged_what_was_relayed(
    agent: str, stream: HeldStream, path: str, body: dict[str, object]
) -> None:
    stream.release.clear()
    async with serving(stream.app(path)) as url:
        base = url if agent == "claude" else f"{url}/v1"
        key = ANTHROPIC_KEY if agent == "claude" else OPENAI_KEY
        proxy = CredentialProxy({agent: Upstream(base, key)})  # type: ignore[dict-item]
        await proxy.listen_tcp()
        grant = proxy.issue(agent)  # type: ignore[arg-type]
        try:
            events = len(stream.head) + DELTAS
            await hang_up_after(f"{proxy.tcp_url}{path}", grant.token, body, events)
            await settled(proxy, grant, stream)
        finally:
            stream.release.set()
            await proxy.close()
    relayed_text = DELTAS * len(PIECE)  # 2,016 bytes: ~500 tokens as the model counts them
    assert grant.spent.output_tokens >= relayed_text // 4
    if agent == "claude":
        assert grant.spent.input_tokens == 10  # reported before the hang-up
    else:
        assert grant.spent.input_tokens >= 300  # the request's ~1,200-byte input, estimated
    assert grant.spent.cost_usd > 0
