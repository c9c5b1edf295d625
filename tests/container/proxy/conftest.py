"""A started credential proxy in front of the scripted fake model APIs (tests/fakes)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from container.proxy import CredentialProxy, Upstream
from tests.fakes.messages_api import FakeMessagesAPI
from tests.fakes.responses_api import FakeResponsesAPI

ANTHROPIC_KEY = "sk-ant-REAL-KEY-do-not-leak"
OPENAI_KEY = "sk-openai-REAL-KEY-do-not-leak"


@pytest.fixture
def messages_api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as fake:
        yield fake


@pytest.fixture
def responses_api() -> Iterator[FakeResponsesAPI]:
    with FakeResponsesAPI() as fake:
        yield fake


@pytest.fixture
async def proxy(
    messages_api: FakeMessagesAPI, responses_api: FakeResponsesAPI
) -> AsyncIterator[CredentialProxy]:
    server = CredentialProxy(
        {
            "claude": Upstream(messages_api.url, ANTHROPIC_KEY),
            "codex": Upstream(responses_api.base_url, OPENAI_KEY),
        }
    )
    await server.listen_tcp()
    try:
        yield server
    finally:
        await server.close()
