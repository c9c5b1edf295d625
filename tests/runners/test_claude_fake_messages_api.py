"""The scripted fake Messages API (tests/fakes/messages_api.py) against the real anthropic SDK.

Claude Code's side of the wire is covered by test_claude_live.py; here: JSON and SSE answers,
count_tokens, auth, errors, structured output through `output_config`, and the scripting rules.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import pytest
from pydantic import BaseModel

from tests.fakes.messages_api import (
    FakeMessagesAPI,
    RecordedRequest,
    Usage,
    any_request,
    api_error,
    fake_messages_api,  # noqa: F401  (the fixture)
    has_tool_result,
    nth_call,
    prompt_contains,
    structured,
    system_contains,
    text,
    tool_offered,
    tool_use,
    tool_uses,
)

pytestmark = pytest.mark.timeout(30)


def client(fake: FakeMessagesAPI) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="sk-test", base_url=fake.url, max_retries=0)


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


async def test_json_reply_with_usage(fake_messages_api: FakeMessagesAPI) -> None:  # noqa: F811
    fake_messages_api.script(
        any_request(), [text("hello there", usage=Usage(11, 7, cache_read_input_tokens=5))]
    )
    message = await client(fake_messages_api).messages.create(
        model="claude-x", max_tokens=100, system="be brief", messages=[user("hi")]
    )
    assert message.content[0].type == "text" and message.content[0].text == "hello there"
    assert message.stop_reason == "end_turn" and message.model == "claude-x"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 7)
    assert message.usage.cache_read_input_tokens == 5
    (request,) = fake_messages_api.requests
    assert request.system == "be brief" and request.user_texts() == ["hi"]
    assert request.headers["authorization"] == "Bearer sk-test"


async def test_streamed_tool_use(fake_messages_api: FakeMessagesAPI) -> None:  # noqa: F811
    fake_messages_api.script(
        tool_offered("Bash"),
        [tool_uses([("Bash", {"command": "ls"}), ("Read", {"file_path": "/a"})], say="Looking")],
    )
    tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
    async with client(fake_messages_api).messages.stream(
        model="m", max_tokens=100, messages=[user("go")], tools=tools
    ) as stream:
        streamed = "".join([chunk async for chunk in stream.text_stream])
        message = await stream.get_final_message()
    assert streamed == "Looking"
    assert message.stop_reason == "tool_use"
    calls = [(b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert calls == [("Bash", {"command": "ls"}), ("Read", {"file_path": "/a"})]
    ids = [b.id for b in message.content if b.type == "tool_use"]
    assert len(set(ids)) == 2


async def test_structured_output_via_output_config(
    fake_messages_api: FakeMessagesAPI,  # noqa: F811
) -> None:
    class Ruling(BaseModel):
        verdict: str

    fake_messages_api.script(any_request(), [structured({"verdict": "RESET"})])
    parsed = await client(fake_messages_api).messages.parse(
        model="m", max_tokens=100, messages=[user("rule")], output_format=Ruling
    )
    assert parsed.parsed_output == Ruling(verdict="RESET")
    body = fake_messages_api.requests[0].body
    assert body["output_config"]["format"]["type"] == "json_schema"


async def test_count_tokens_and_api_errors(fake_messages_api: FakeMessagesAPI) -> None:  # noqa: F811
    api = client(fake_messages_api)
    count = await api.messages.count_tokens(model="m", messages=[user("x")])
    assert count.input_tokens == 10
    fake_messages_api.script(any_request(), [api_error(429, "slow down", error_type="rate_limit")])
    with pytest.raises(anthropic.RateLimitError, match="slow down"):
        await api.messages.create(model="m", max_tokens=5, messages=[user("x")])
    # the scripted error was used once; the next call gets the default reply
    after = await api.messages.create(model="m", max_tokens=5, messages=[user("x")])
    assert after.content[0].type == "text" and after.content[0].text == "DONE"


def test_requests_without_a_key_or_with_bad_json_are_refused() -> None:
    with FakeMessagesAPI() as fake:
        bare = urllib.request.Request(f"{fake.url}/v1/messages", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bare, timeout=5)
        assert refused.value.code == 401
        garbled = urllib.request.Request(
            f"{fake.url}/v1/messages?beta=true",
            data=b"{nope",
            method="POST",
            headers={"x-api-key": "k"},
        )
        with pytest.raises(urllib.error.HTTPError) as bad:
            urllib.request.urlopen(garbled, timeout=5)
        assert bad.value.code == 400
        assert "bad JSON body" in json.loads(bad.value.read())["error"]["message"]
        assert fake.calls == []  # neither reached the script


async def test_scripts_are_consumed_in_order_with_a_default() -> None:
    with FakeMessagesAPI(default=text("fallback")) as fake:
        fake.script(system_contains("owner") & ~has_tool_result(), [text("o1"), text("o2")])
        fake.script(system_contains("reviewer"), [text("r1")], repeat_last=True)
        fake.script(nth_call(5), [text("sixth call")])
        fake.script(prompt_contains("never sent"), [text("unused")])
        api = client(fake)

        async def ask(system: str) -> str:
            message = await api.messages.create(
                model="m", max_tokens=5, system=system, messages=[user("q")]
            )
            block = message.content[0]
            assert block.type == "text"
            return block.text

        answers = [await ask(s) for s in ["owner", "reviewer", "owner", "owner", "reviewer", "x"]]
        assert answers == ["o1", "r1", "o2", "fallback", "r1", "sixth call"]
        with pytest.raises(AssertionError, match="never sent"):
            fake.assert_all_consumed()


async def test_tool_result_matcher_sees_the_last_message() -> None:
    with FakeMessagesAPI() as fake:
        fake.script(has_tool_result(), [text("saw the result")])
        fake.script(any_request(), [tool_use("Bash", {"command": "ls"})])
        api = client(fake)
        first = await api.messages.create(model="m", max_tokens=5, messages=[user("go")])
        call = first.content[0]
        assert call.type == "tool_use"
        follow_up = [
            user("go"),
            {"role": "assistant", "content": [call.model_dump()]},
            user([{"type": "tool_result", "tool_use_id": call.id, "content": "a.txt"}]),
        ]
        second = await api.messages.create(model="m", max_tokens=5, messages=follow_up)
        assert second.content[0].type == "text" and second.content[0].text == "saw the result"
        assert fake.calls[1].tool_result_text() == "a.txt"


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([{"role": "user", "content": "hi"}], False),
        ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}], True),
        # Claude Code may add a reminder message after the tool results: still a tool result.
        (
            [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
                {"role": "user", "content": [{"type": "text", "text": "USD budget: $1"}]},
            ],
            True,
        ),
        # A tool result the model has already answered is not a new one.
        (
            [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
                {"role": "user", "content": "next"},
            ],
            False,
        ),
    ],
)
def test_has_tool_result_looks_at_everything_since_the_last_answer(
    messages: list[dict[str, Any]], expected: bool
) -> None:
    request = RecordedRequest("/v1/messages", {}, {"messages": messages})
    assert has_tool_result()(request, 0) is expected
