"""Reading usage from the answers as they pass (container/proxy/usage.py): the same counts however
the bytes are cut into chunks (property), both APIs, streamed and not, and hostile or broken
answers that must not crash the proxy or inflate the count."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from container.proxy.usage import (
    ANTHROPIC,
    DELTA_TEXT,
    MAX_LINE_BYTES,
    OPENAI,
    UsageMeter,
    delta_string_bytes,
)
from tests.fakes import messages_api as m
from tests.fakes import responses_api as r
from tests.fakes.messages_script import RecordedRequest as MessagesRequest
from tests.fakes.scripted_api import sse_body


def anthropic_stream(usage: m.Usage, text: str = "hello") -> bytes:
    request = MessagesRequest("/v1/messages", {}, {"messages": []})
    message = m.message_json(m.text(text, usage=usage), "claude-sonnet-4-5", request)
    return sse_body(m.sse_events(message))


def openai_stream(usage: r.Usage, text: str = "hello") -> bytes:
    response = r.response_json(r.text(text, usage=usage), "gpt-5")
    return sse_body(r.sse_events(response))


def metered(api: str, data: bytes, cuts: list[int], *, streamed: bool = True) -> UsageMeter:
    meter = UsageMeter(api, streamed=streamed)
    start = 0
    for cut in sorted(set(c % (len(data) + 1) for c in cuts)):
        meter.feed(data[start:cut])
        start = cut
    meter.feed(data[start:])
    meter.finish()
    return meter


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=30))
def test_anthropic_usage_whatever_the_chunks(cuts: list[int]) -> None:
    usage = m.Usage(120, 33, cache_creation_input_tokens=7, cache_read_input_tokens=400)
    spent = metered(ANTHROPIC, anthropic_stream(usage, "usage " * 50), cuts).spent()
    assert (spent.input_tokens, spent.output_tokens) == (527, 33)


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=30))
def test_openai_usage_whatever_the_chunks(cuts: list[int]) -> None:
    usage = r.Usage(300, 44, cached_tokens=100)
    spent = metered(OPENAI, openai_stream(usage, '"usage"'), cuts).spent()
    assert (spent.input_tokens, spent.output_tokens) == (300, 44)


def test_json_answers() -> None:
    body = json.dumps({"model": "claude-x", "usage": {"input_tokens": 9, "output_tokens": 2}})
    spent = metered(ANTHROPIC, body.encode(), [5], streamed=False).spent()
    assert (spent.input_tokens, spent.output_tokens) == (9, 2)
    body = json.dumps({"model": "gpt-5", "usage": {"input_tokens": 8, "output_tokens": 1}})
    spent = metered(OPENAI, body.encode(), [3], streamed=False).spent()
    assert (spent.input_tokens, spent.output_tokens) == (8, 1)


@pytest.mark.parametrize(
    "data",
    [
        b"not json at all",
        b"[1, 2, 3]",
        json.dumps({"usage": {"input_tokens": -5, "output_tokens": "many"}}).encode(),
        json.dumps({"usage": "none"}).encode(),
        b"",
    ],
)
def test_broken_json_answers_count_nothing(data: bytes) -> None:
    spent = metered(ANTHROPIC, data, [], streamed=False).spent()
    assert (spent.input_tokens, spent.output_tokens) == (0, 0)


def test_a_line_too_long_is_skipped_and_the_usage_after_it_still_read() -> None:
    huge = b'data: {"type": "ping", "usage": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n\n'
    data = huge + anthropic_stream(m.Usage(5, 6))
    spent = metered(ANTHROPIC, data, list(range(0, len(data), 1 << 20))).spent()
    assert (spent.input_tokens, spent.output_tokens) == (5, 6)


def test_an_answer_cut_short_keeps_what_it_reported() -> None:
    data = anthropic_stream(m.Usage(50, 10))
    cut = data.index(b"event: message_delta")
    spent = metered(ANTHROPIC, data[:cut], []).spent()
    assert (spent.input_tokens, spent.output_tokens) == (50, 1)  # message_start's first count


# The pieces delta strings are made of, escapes and line breaks included.
_PIECES = [b'"text":', b'"delta":', b'"thinking": ', b'"partial_json":"', b'"', b"\\", b"\n",
           b"a", b" ", b"{", b"}"]  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=30), api=st.sampled_from([ANTHROPIC, OPENAI])
)
def test_the_delta_count_is_the_regexs(pieces: list[bytes], api: str) -> None:
    # The count of model text relayed (what an answer cut short is charged for) is found with
    # bytes.find for speed; it must be exactly what the DELTA_TEXT expression matches.
    data = b"".join(pieces)
    expected = sum(m.end(1) - m.start(1) for m in DELTA_TEXT[api].finditer(data))
    assert delta_string_bytes(api, data) == expected
