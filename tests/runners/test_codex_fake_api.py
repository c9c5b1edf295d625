"""The fake Responses API itself, checked with the real openai SDK (3.x) on loopback: what the
Codex tests rely on must be what a real client accepts."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest

from tests.fakes.responses_api import (
    FakeResponsesAPI,
    Usage,
    api_error,
    instructions_contain,
    nth_call,
    prompt_contains,
    reasoning,
    schema_requested,
    shell,
    structured,
    text,
)


@pytest.fixture
def fake() -> Iterator[FakeResponsesAPI]:
    with FakeResponsesAPI(default=text("default")) as server:
        yield server


@pytest.fixture
def client(fake: FakeResponsesAPI) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0) as c:
        yield c


def test_rules_answer_in_order_and_the_default_answers_the_rest(
    fake: FakeResponsesAPI, client: openai.OpenAI
) -> None:
    fake.script(prompt_contains("weather"), [text("sunny", usage=Usage(50, 7)), text("rainy")])
    fake.script(instructions_contain("be terse"), [text("ok")])
    first = client.responses.create(model="m", input="weather?")
    assert first.output_text == "sunny"
    assert first.usage is not None and (first.usage.input_tokens, first.usage.output_tokens) == (
        50,
        7,
    )
    assert client.responses.create(model="m", input="weather again?").output_text == "rainy"
    assert client.responses.create(model="m", input="weather?").output_text == "default"
    terse = client.responses.create(model="m", instructions="be terse", input="hi")
    assert terse.output_text == "ok"
    assert [c.body["input"] for c in fake.calls] == [
        "weather?",
        "weather again?",
        "weather?",
        "hi",
    ]
    assert fake.calls[3].instructions == "be terse"
    assert fake.calls[0].headers["authorization"] == "Bearer sk-test"
    fake.assert_all_consumed()


def test_streaming_sends_the_events_a_client_assembles(
    fake: FakeResponsesAPI, client: openai.OpenAI
) -> None:
    fake.script(nth_call(0), [reasoning("thinking") + text("streamed answer")])
    with client.responses.stream(model="m", input="go") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert deltas == ["streamed answer"]
    assert final.output_text == "streamed answer"
    assert [item.type for item in final.output] == ["reasoning", "message"]


def test_a_function_call_reply(fake: FakeResponsesAPI, client: openai.OpenAI) -> None:
    fake.script(nth_call(0), [shell("ls -la")])
    response = client.responses.create(model="m", input="list files")
    [call] = response.output
    assert call.type == "function_call" and call.name == "exec_command"
    assert json.loads(call.arguments) == {"cmd": "ls -la"} and call.call_id


def test_structured_output_and_the_schema_the_client_sent(
    fake: FakeResponsesAPI, client: openai.OpenAI
) -> None:
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string"}},
        "required": ["verdict"],
        "additionalProperties": False,
    }
    fake.script(schema_requested(), [structured({"verdict": "PROCEED"})])
    response = client.responses.create(
        model="m",
        input="rule",
        text={
            "format": {"type": "json_schema", "name": "ruling", "schema": schema, "strict": True}
        },
    )
    assert json.loads(response.output_text) == {"verdict": "PROCEED"}
    assert fake.calls[0].output_schema == schema


def test_an_api_error_reaches_the_client_as_its_error(
    fake: FakeResponsesAPI, client: openai.OpenAI
) -> None:
    fake.script(nth_call(0), [api_error(400, "quota exceeded")])
    with pytest.raises(openai.BadRequestError, match="quota exceeded"):
        client.responses.create(model="m", input="x")


def test_a_request_without_a_key_is_refused(fake: FakeResponsesAPI) -> None:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"{fake.base_url}/responses", data=b'{"model": "m", "input": "x"}', method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 401
    assert fake.calls == []  # refused before any rule is consumed
