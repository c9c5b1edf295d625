"""Reading the model's answer from the relayed bytes (container/proxy/answers.py): both APIs,
streamed and not, however the bytes are cut; tool calls, structured output, broken and
over-long answers; and the per-grant log that keeps only the newest question's answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from container.proxy import answers
from container.proxy.answers import ANTHROPIC, OPENAI, Answer, AnswerLog
from tests.fakes import messages_api as m
from tests.fakes import responses_api as r
from tests.fakes.messages_script import RecordedRequest as MessagesRequest
from tests.fakes.scripted_api import sse_body

SCHEMA_REQUEST = MessagesRequest("/v1/messages", {}, {"tools": [{"name": "StructuredOutput"}]})


def anthropic(reply: m.Reply, *, streamed: bool = True) -> bytes:
    message = m.message_json(reply, "claude-x", SCHEMA_REQUEST)
    return sse_body(m.sse_events(message)) if streamed else json.dumps(message).encode()


def openai(reply: r.Reply, *, streamed: bool = True) -> bytes:
    response = r.response_json(reply, "gpt-x")
    return (
        sse_body(r.sse_events(response, reply.failure))
        if streamed
        else json.dumps(response).encode()
    )


def read(api: str, data: bytes, cuts: list[int] = (), *, streamed: bool = True) -> Answer | None:
    log = AnswerLog()
    tap = log.ask()
    tap.open(api, streamed=streamed)
    start = 0
    for cut in sorted({c % (len(data) + 1) for c in cuts}):
        tap.feed(data[start:cut])
        start = cut
    tap.feed(data[start:])
    tap.finish()
    return log.answer


TWO_BLOCKS = m.Reply(blocks=({"type": "text", "text": "first"}, {"type": "text", "text": "LAST"}))
TWO_MESSAGES = r.text("first") + r.text("LAST")

CASES: list[tuple[str, str, Any, Answer]] = [
    ("claude text", ANTHROPIC, m.text("CHANGES_REQUESTED\nfix it"),
     Answer("CHANGES_REQUESTED\nfix it")),
    ("claude: the last text block", ANTHROPIC, TWO_BLOCKS, Answer("LAST")),
    ("claude tool call", ANTHROPIC, m.tool_use("Bash", {"command": "ls"}, say="Looking"),
     Answer("Looking", None, calls_tools=True)),
    ("claude structured", ANTHROPIC, m.structured({"verdict": "APPROVED", "n": 1}),
     Answer(None, {"verdict": "APPROVED", "n": 1})),
    ("codex text", OPENAI, r.text("DONE\nok"), Answer("DONE\nok")),
    ("codex: the last message", OPENAI, TWO_MESSAGES, Answer("LAST")),
    ("codex tool call", OPENAI, r.text("let me look") + r.shell("ls"),
     Answer("let me look", calls_tools=True)),
    ("codex reasoning is no tool", OPENAI, r.reasoning("think") + r.text("DONE"), Answer("DONE")),
    ("codex failed", OPENAI, r.stream_failure("boom"), Answer(None, whole=False)),
]  # fmt: skip


@pytest.mark.parametrize("streamed", [True, False])
@pytest.mark.parametrize(("name", "api", "reply", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_answer_is_read(
    name: str, api: str, reply: Any, expected: Answer, streamed: bool
) -> None:
    if "failed" in name and not streamed:
        pytest.skip("a JSON answer has no failure event")
    data = (
        anthropic(reply, streamed=streamed)
        if api == ANTHROPIC
        else openai(reply, streamed=streamed)
    )
    assert read(api, data, streamed=streamed) == expected


@settings(max_examples=50, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_chunking_does_not_matter(cuts: list[int]) -> None:
    text = "APPROVED — héllo\n" * 50
    assert read(ANTHROPIC, anthropic(m.text(text)), cuts) == Answer(text)
    assert read(OPENAI, openai(r.text(text)), cuts) == Answer(text)


@pytest.mark.parametrize("api", [ANTHROPIC, OPENAI])
def test_a_stream_cut_before_its_end_is_no_answer(api: str) -> None:
    data = anthropic(m.text("APPROVED")) if api == ANTHROPIC else openai(r.text("APPROVED"))
    end = b"message_stop" if api == ANTHROPIC else b"response.completed"
    cut = data[: data.index(end)]
    assert read(api, cut) is None


def test_an_answer_past_the_cap_is_not_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answers, "MAX_ANSWER_CHARS", 100)
    answer = read(ANTHROPIC, anthropic(m.text("x" * 101)))
    assert answer is not None and not answer.whole
    answer = read(OPENAI, openai(r.text("x" * 101)))
    assert answer is not None and not answer.whole


def test_a_line_past_the_cap_is_dropped_and_the_answer_not_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(answers, "MAX_LINE_BYTES", 200)
    answer = read(ANTHROPIC, anthropic(m.text("y" * 500)))
    assert answer is not None and not answer.whole and answer.text in (None, "")


def test_the_log_keeps_only_the_newest_questions_answer() -> None:
    log = AnswerLog()
    first = log.ask()
    first.open(ANTHROPIC, streamed=True)
    second = log.ask()  # asked before the first was answered (a concurrent request)
    second.open(ANTHROPIC, streamed=True)
    second.feed(anthropic(m.text("newest")))
    first.feed(anthropic(m.text("older, but answered later")))
    assert log.answer == Answer("newest")
    log.ask()  # a new question: no answer until it is answered
    assert log.answer is None


def test_an_unopened_tap_answers_nothing() -> None:
    """A non-200 answer is never opened: the question stays unanswered."""
    log = AnswerLog()
    tap = log.ask()
    tap.feed(anthropic(m.text("APPROVED")))
    tap.finish()
    assert log.answer is None


@pytest.mark.parametrize(
    "junk",
    [
        b'data: {"type":"content_block_delta","index":0',  # cut short
        b'data: {"type": "content_block_delta"},{"index": 0}',  # two values on one line
        b'data: "content_block_delta"',  # not an object
        b"data: \xff content_block_delta",  # not UTF-8
    ],
)
def test_broken_event_lines_are_skipped_and_the_rest_still_read(junk: bytes) -> None:
    # The event lines of a chunk are decoded together; one that is no JSON object must not
    # lose (or merge into) the events around it.
    text = "APPROVED\nall good"
    data = anthropic(m.text(text))
    delta = data.index(b"event: content_block_delta")
    spoiled = data[:delta] + junk + b"\n\n" + data[delta:]
    assert read(ANTHROPIC, spoiled) == Answer(text)
    assert read(ANTHROPIC, spoiled, [delta + 3, delta + len(junk) + 1]) == Answer(text)
