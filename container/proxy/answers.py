"""The model's answers, read from the bytes the proxy relays (beside usage.py), so that a turn's
final answer can be checked against what the model really said (container/proxy/finals.py).

Every model request of a run token is a question; its answer is recorded per grant in an
`AnswerLog`, which keeps only the answer of the newest question (asking again forgets the
last answer, so a final can only ever be the newest one). What is read of an answer:

- Anthropic Messages (SSE `content_block_start` / `content_block_delta` with `text_delta` or
  `input_json_delta` / `message_stop`, or one JSON message): the text of its last `text`
  content block (Claude Code's `result` is that block, checked with 2.1.332), the input of a
  `StructuredOutput` tool call (Claude Code's structured output), and whether it calls any
  other tool (then the model is not done: it is no final answer);
- OpenAI Responses (SSE `response.output_item.done` and `response.completed`, or one JSON
  response): the text of its last `message` output item (its `output_text` parts joined; Codex
  makes each message item an `agent_message` and its final answer is the last one), and
  whether any output item is something else than a message or reasoning (a tool call).

An answer counts once its stream says it is complete (`message_stop`, `response.completed`;
a JSON body when it has been read whole), and it is published to the log at that moment,
before the bytes reach the runner: by the time the runner can act on an answer, the log has it.
Memory is bounded: one answer's text and structured input are kept up to MAX_ANSWER_CHARS (an
answer past that is recorded as not whole, and no final can match it), and an event line
longer than MAX_LINE_BYTES is dropped (the answer is then not whole either).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

MAX_ANSWER_CHARS = 4 * 1024 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024  # response.completed repeats the whole output on one line
ANTHROPIC, OPENAI = "anthropic", "openai"  # as in usage.py
STRUCTURED_OUTPUT_TOOL = "StructuredOutput"  # Claude Code's tool for a JSON-schema answer
_ANSWER_ITEMS = frozenset({"message", "reasoning"})  # OpenAI output items that call no tool
# Only the event lines that name one of these are parsed (most of an answer's lines are deltas
# of other kinds).
_WANTED = {
    ANTHROPIC: re.compile(rb'"(?:content_block_start|content_block_delta|message_stop)"'),
    OPENAI: re.compile(rb'"response\.(?:output_item\.done|completed|failed|incomplete)"'),
}


@dataclass(frozen=True)
class Answer:
    """One complete model answer as the proxy relayed it.

    text: the answer's text (see the module docstring), None when it has none; structured: a
    StructuredOutput call's input (Anthropic), None when there is none; calls_tools: the answer
    asks for a tool, so it is not the model's final word; whole: everything was read (nothing
    dropped for the caps)."""

    text: str | None
    structured: Any = None
    calls_tools: bool = False
    whole: bool = True


@dataclass
class AnswerLog:
    """Per grant: the answer to the newest question, once it is complete."""

    asked: int = 0  # questions (answer requests) so far
    answer: Answer | None = None  # the newest question's answer; None while it has none

    def ask(self) -> AnswerTap:
        """A new question: until it is answered in full, the turn has no answer."""
        self.asked += 1
        self.answer = None
        return AnswerTap(self, self.asked)

    def answered(self, seq: int, answer: Answer) -> None:
        if seq == self.asked:  # an older question's late answer is not the newest answer
            self.answer = answer


@dataclass
class AnswerTap:
    """Reads one question's answer from the relayed bytes; `open` once the answer's status and
    type are known (a non-200 answer is never opened: the question stays unanswered)."""

    log: AnswerLog
    seq: int
    _reader: _Reader | None = None

    def open(self, api: str, *, streamed: bool) -> None:
        self._reader = _Reader(api, streamed)

    def feed(self, data: bytes) -> None:
        reader = self._reader
        if reader is not None and reader.feed(data):
            self._publish()

    def finish(self) -> None:
        """The body ended: a JSON answer is complete now (a stream only by its own event)."""
        reader = self._reader
        if reader is not None and reader.finish():
            self._publish()

    def _publish(self) -> None:
        assert self._reader is not None
        self.log.answered(self.seq, self._reader.answer())
        self._reader = None  # one answer per question


@dataclass
class _Block:
    kind: str  # "text", "structured", "tool" or "other"
    parts: list[str] = field(default_factory=list)


class _Reader:
    def __init__(self, api: str, streamed: bool) -> None:
        self.api = api
        self.streamed = streamed
        self.blocks: dict[int, _Block] = {}  # Anthropic content blocks by index
        self.items: list[dict[str, Any]] = []  # OpenAI output items, as they were done
        self.final_items: list[dict[str, Any]] | None = None  # response.completed's output
        self.whole = True
        self.chars = 0
        self._tail = bytearray()
        self._skipping = False
        self._body = bytearray()
        self._complete = False
        self._wanted = _WANTED[api]

    # ------------------------------------------------------------------ bytes

    def feed(self, data: bytes) -> bool:
        """Take relayed bytes; True when they completed the answer.

        A chunk is split into lines in one call, and only the event lines that can matter are
        parsed (most of an answer is deltas of other kinds): no Python loop over its bytes."""
        if not self.streamed:
            if len(self._body) + len(data) <= MAX_LINE_BYTES:
                self._body += data
            else:
                self.whole = False
            return False
        if self._complete:
            return True
        lines = data.split(b"\n")
        rest = lines.pop()  # the unfinished last line (b"" when the chunk ends one)
        if lines:
            first = lines[0]
            if self._skipping:  # the end of a line too long to keep: it is dropped
                self._skipping = False
                lines[0] = b""
            elif self._tail:
                if len(self._tail) + len(first) > MAX_LINE_BYTES:
                    lines[0], self.whole = b"", False
                else:
                    lines[0] = bytes(self._tail) + first
            self._tail = bytearray()
            if len(data) > MAX_LINE_BYTES and any(len(x) > MAX_LINE_BYTES for x in lines):
                # A line too long to keep, whole in this chunk: dropped, as one spread over many.
                self.whole = False
                lines = [x for x in lines if len(x) <= MAX_LINE_BYTES]
            wanted = self._wanted.search
            payloads = [x[5:] for x in lines if x.startswith(b"data:") and wanted(x)]
            for event in _events(payloads):
                if self.api == ANTHROPIC:
                    self._anthropic(event)
                else:
                    self._openai(event)
                if self._complete:
                    return True
        self._keep(rest)
        return False

    def _keep(self, part: bytes) -> None:
        if self._skipping:
            return
        if len(self._tail) + len(part) > MAX_LINE_BYTES:
            self._tail, self._skipping, self.whole = bytearray(), True, False
            return
        self._tail += part

    def finish(self) -> bool:
        if self._complete:
            return False
        if self.streamed:
            return False  # a stream that ended without its last event is no answer
        try:
            body = json.loads(self._body)
        except ValueError:
            return False
        if not isinstance(body, dict):
            return False
        if self.api == ANTHROPIC:
            for index, block in enumerate(_list(body.get("content"))):
                if isinstance(block, dict):
                    self._start_block(index, block)
        else:
            self.final_items = [i for i in _list(body.get("output")) if isinstance(i, dict)]
        self._complete = True
        return True

    # ------------------------------------------------------------------ Anthropic

    def _anthropic(self, event: dict[str, Any]) -> None:
        kind, index = event.get("type"), event.get("index")
        if kind == "message_stop":
            self._complete = True
        elif kind == "content_block_start" and isinstance(index, int):
            block = event.get("content_block")
            if isinstance(block, dict):
                self._start_block(index, block)
        elif kind == "content_block_delta" and isinstance(index, int):
            delta = event.get("delta")
            target = self.blocks.get(index)
            if not isinstance(delta, dict) or target is None:
                return
            if delta.get("type") == "text_delta" and target.kind == "text":
                self._add(target, delta.get("text"))
            elif delta.get("type") == "input_json_delta" and target.kind == "structured":
                self._add(target, delta.get("partial_json"))

    def _start_block(self, index: int, block: dict[str, Any]) -> None:
        kind = block.get("type")
        if kind == "text":
            self.blocks[index] = _Block("text")
            self._add(self.blocks[index], block.get("text"))
        elif kind == "tool_use" and block.get("name") == STRUCTURED_OUTPUT_TOOL:
            self.blocks[index] = _Block("structured")
            given = block.get("input")
            if given:  # a JSON answer carries the input whole; a stream sends it in deltas
                self._add(self.blocks[index], json.dumps(given))
        elif kind == "tool_use":
            self.blocks[index] = _Block("tool")
        else:
            self.blocks[index] = _Block("other")

    def _add(self, block: _Block, text: object) -> None:
        if not isinstance(text, str) or not text:
            return
        self.chars += len(text)
        if self.chars > MAX_ANSWER_CHARS:
            self.whole = False
            return
        block.parts.append(text)

    # ------------------------------------------------------------------ OpenAI

    def _openai(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            self.items.append(event["item"])
        elif kind == "response.completed":
            response = event.get("response")
            output = response.get("output") if isinstance(response, dict) else None
            if isinstance(output, list) and output:
                self.final_items = [i for i in output if isinstance(i, dict)]
            self._complete = True
        elif kind in ("response.failed", "response.incomplete"):
            self.whole = False
            self._complete = True

    # ------------------------------------------------------------------ the answer

    def answer(self) -> Answer:
        if self.api == ANTHROPIC:
            return self._anthropic_answer()
        return self._openai_answer()

    def _anthropic_answer(self) -> Answer:
        ordered = [self.blocks[i] for i in sorted(self.blocks)]
        texts = ["".join(b.parts) for b in ordered if b.kind == "text"]
        structured: Any = None
        whole = self.whole
        for block in ordered:
            if block.kind == "structured":
                try:
                    structured = json.loads("".join(block.parts) or "{}")
                except ValueError:
                    whole = False
        calls = any(b.kind == "tool" for b in ordered)
        return Answer(texts[-1] if texts else None, structured, calls, whole)

    def _openai_answer(self) -> Answer:
        items = self.final_items if self.final_items is not None else self.items
        texts: list[str] = []
        for item in items:
            if item.get("type") == "message":
                parts = _list(item.get("content"))
                texts.append(
                    "".join(
                        str(p.get("text", ""))
                        for p in parts
                        if isinstance(p, dict) and p.get("type") == "output_text"
                    )
                )
        whole = self.whole and sum(len(t) for t in texts) <= MAX_ANSWER_CHARS
        calls = any(item.get("type") not in _ANSWER_ITEMS for item in items)
        return Answer(texts[-1] if texts else None, None, calls, whole)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


_decode = json.JSONDecoder().decode


def _events(payloads: list[bytes]) -> list[dict[str, Any]]:
    """The JSON objects among event payloads, in order; the others are skipped.

    One decoder call for the whole list (a 2 MB answer is ~2,000 events: one call each cost
    twice as much). When that fails, or gives another count than the lines (two lines that
    are no JSON each could together be one value), each line is decoded on its own."""
    if not payloads:
        return []
    try:
        values = _decode("[" + b",".join(payloads).decode("utf-8") + "]")
        if isinstance(values, list) and len(values) == len(payloads):
            return [v for v in values if isinstance(v, dict)]
    except ValueError:
        pass
    events: list[dict[str, Any]] = []
    for payload in payloads:
        try:
            value = _decode(payload.decode("utf-8"))
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events
