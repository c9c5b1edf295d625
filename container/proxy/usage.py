"""Reading the usage a model API reports in its answers, as the bytes pass through the proxy.

Streamed answers are server-sent events; the usage is in a few of them:
- Anthropic Messages: `message_start` (message.usage: input tokens, cache writes and reads, the
  first output count) and `message_delta` (usage: the output count so far, and in newer API
  versions the input counts again); the last value of each field is the answer's.
- OpenAI Responses: `response.completed` (or `.incomplete` / `.failed`) with response.usage
  (input_tokens including input_tokens_details.cached_tokens, output_tokens).
A JSON answer (no streaming) carries the same `usage` object at its top level (Anthropic) or
as `usage` of the response object (OpenAI).

Only event lines that mention "usage" are parsed as JSON (a 2 MB answer is mostly text deltas
that do not), and a line longer than MAX_LINE_BYTES is skipped rather than buffered.

An answer cut short (the runner hung up, the turn was revoked) carries no final usage: the
Anthropic input counts arrive first, the output count and all of OpenAI's only at the end. For
it, `estimated()` charges the input the API reported, else the request's input estimate
(container/proxy/limits.py), and for output at least one token per `BYTES_PER_OUTPUT_TOKEN`
bytes of the text, thinking and tool-input deltas relayed (JSON-escaped, so a little more
than what the model wrote), so hanging up mid-answer does not make an answer free.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from container.proxy.grants import Spent
from container.proxy.prices import PRICES, Price, cost_usd

MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_JSON_BYTES = 16 * 1024 * 1024
ANTHROPIC, OPENAI = "anthropic", "openai"
BYTES_PER_OUTPUT_TOKEN = 3
# The string values of the delta events: what the model wrote (a `"text":` also opens each
# Anthropic text block, empty; OpenAI's `.done` events repeat the whole text, so only deltas).
_STRING = rb'\s*"([^"\\]*(?:\\.[^"\\]*)*)"'
DELTA_TEXT = {
    ANTHROPIC: re.compile(rb'"(?:text|partial_json|thinking)":' + _STRING),
    OPENAI: re.compile(rb'"delta":' + _STRING),
}
# Where such a string starts; its end is found with bytes.find (the regex above, run over 2 MB
# of deltas, cost more than everything else the proxy does with an answer).
_OPENING = {
    ANTHROPIC: re.compile(rb'"(?:text|partial_json|thinking)":\s*"'),
    OPENAI: re.compile(rb'"delta":\s*"'),
}
_BACKSLASH = 0x5C


def delta_string_bytes(api: str, data: bytes) -> int:
    """The bytes of the delta strings in `data` (what DELTA_TEXT's group 1 matches, summed)."""
    total, pos = 0, 0
    opening, find = _OPENING[api].search, data.find
    while (match := opening(data, pos)) is not None:
        start = end = match.end()
        while True:  # the closing quote: one not escaped by an odd run of backslashes
            end = find(b'"', end)
            if end < 0:
                return total  # unterminated: the regex finds no match from here on either
            escapes = end
            while escapes > start and data[escapes - 1] == _BACKSLASH:
                escapes -= 1
            if (end - escapes) % 2 == 0:
                break
            end += 1
        if find(b"\\\n", start, end) >= 0:  # `\.` does not match a newline: ask the regex
            exact = DELTA_TEXT[api].match(data, match.start())
            if exact is None:
                pos = match.start() + 1
                continue
            start, end = exact.span(1)
        total += end - start
        pos = end + 1
    return total


class UsageMeter:
    """Feed it the answer's bytes as they pass; `spent()` is the usage read from them."""

    def __init__(
        self,
        api: str,
        *,
        streamed: bool,
        model: str | None = None,
        prices: Mapping[str, Price] = PRICES,
    ) -> None:
        self.api = api
        self.streamed = streamed
        self.model = model
        self.prices = prices
        self.counts: dict[str, int] = {}
        self._tail = b""  # the unfinished last line of what was fed
        self._skipping = False
        self._body = bytearray()
        self._body_over = False
        self.complete = False  # the answer's final usage was read
        self.delta_bytes = 0  # bytes of model text relayed in delta events

    def feed(self, data: bytes) -> None:
        if not self.streamed:
            if len(self._body) + len(data) <= MAX_JSON_BYTES:
                self._body += data
            else:
                self._body_over = True
            return
        if self._skipping:  # inside a line too long to keep: drop it up to its end
            cut = data.find(b"\n")
            if cut < 0:
                self.delta_bytes += len(data)  # unread: count it all as model text
                return
            self.delta_bytes += cut
            self._skipping = False
            data = data[cut + 1 :]
        first = data.find(b"\n")
        if first < 0:
            self._tail += data
            if len(self._tail) > MAX_LINE_BYTES:
                self.delta_bytes += len(self._tail)
                self._tail, self._skipping = b"", True
            return
        # The line the tail was waiting for ends here; then whole lines; then a new tail. Most
        # of a long answer is text deltas: the lines are only looked at near a "usage", and the
        # search runs in place (no copy of the chunk).
        self._line_done(self._tail + data[:first])
        last = data.rfind(b"\n")
        self._count_deltas(self._tail + data[:first])
        if last > first:
            self._count_deltas(data[first + 1 : last])
        if last > first and data.find(b'"usage"', first + 1, last) >= 0:
            for line in data[first + 1 : last].split(b"\n"):
                self._line_done(line)
        self._tail = data[last + 1 :]
        if len(self._tail) > MAX_LINE_BYTES:
            self.delta_bytes += len(self._tail)
            self._tail, self._skipping = b"", True

    def _count_deltas(self, lines: bytes) -> None:
        self.delta_bytes += delta_string_bytes(self.api, lines)

    def _line_done(self, line: bytes) -> None:
        if not line.startswith(b"data:") or b'"usage"' not in line:
            return
        try:
            event = json.loads(line[5:])
        except ValueError:
            return
        if isinstance(event, dict):
            self._read_event(event)

    def _read_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if self.api == ANTHROPIC:
            if kind == "message_start" and isinstance(event.get("message"), dict):
                message = event["message"]
                self.model = message.get("model") or self.model
                self._take_anthropic(message.get("usage"))
            elif kind == "message_delta":
                self._take_anthropic(event.get("usage"))
                self.complete = True
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = event.get("response")
            if isinstance(response, dict):
                self.model = response.get("model") or self.model
                self._take_openai(response.get("usage"))
                self.complete = True

    def _take_anthropic(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ):
            value = usage.get(name)
            if isinstance(value, int) and value >= 0:
                self.counts[name] = value

    def _take_openai(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        for name in ("input_tokens", "output_tokens"):
            value = usage.get(name)
            if isinstance(value, int) and value >= 0:
                self.counts[name] = value
        details = usage.get("input_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        if isinstance(cached, int) and cached >= 0:
            self.counts["cached_tokens"] = cached

    def finish(self) -> None:
        """The answer is complete: read a JSON body (or a last event line without newline)."""
        if self.streamed:
            if self._tail and not self._skipping:
                self._line_done(self._tail)
            self._tail = b""
            return
        if self._body_over or not self._body:
            return
        try:
            body = json.loads(self._body)
        except ValueError:
            return
        if not isinstance(body, dict):
            return
        self.model = body.get("model") or self.model
        if self.api == ANTHROPIC:
            self._take_anthropic(body.get("usage"))
        else:
            self._take_openai(body.get("usage"))
        self.complete = "usage" in body

    def estimated(self, input_estimate: int) -> Spent:
        """What an answer cut short is charged (see the module docstring)."""
        if self.complete:
            return self.spent()
        counts = dict(self.counts)
        if not any(k in counts for k in ("input_tokens", "cache_read_input_tokens")):
            counts["input_tokens"] = input_estimate
        relayed = -(-self.delta_bytes // BYTES_PER_OUTPUT_TOKEN)
        counts["output_tokens"] = max(counts.get("output_tokens", 0), relayed)
        return self.spent(counts)

    def spent(self, counts: Mapping[str, int] | None = None) -> Spent:
        c = self.counts if counts is None else counts
        output = c.get("output_tokens", 0)
        if self.api == ANTHROPIC:
            plain = c.get("input_tokens", 0)
            written = c.get("cache_creation_input_tokens", 0)
            read = c.get("cache_read_input_tokens", 0)
        else:
            read = min(c.get("cached_tokens", 0), c.get("input_tokens", 0))
            plain, written = c.get("input_tokens", 0) - read, 0
        cost = cost_usd(
            self.model,
            input_tokens=plain,
            output_tokens=output,
            cache_write_tokens=written,
            cache_read_tokens=read,
            table=self.prices,
        )
        return Spent(plain + written + read, output, cost)


@dataclass
class Exchange:
    """One forwarded request (container/proxy/server.py), for what it is charged: what the
    answer said, or (an answer cut short, or none while the upstream had the request) an
    estimate."""

    api: str
    model: str | None
    input_estimate: int
    sent: bool = False
    unreachable: bool = False
    status: int = 0
    meter: UsageMeter | None = field(default=None, repr=False)

    def read(self) -> Spent:
        """The usage the answer reported, and nothing else."""
        return self.meter.spent() if self.meter is not None else Spent()

    def charge(self, prices: Mapping[str, Price]) -> Spent:
        if self.meter is not None:
            if self.status >= 300:  # an error answer: what it says it cost, if anything
                return self.meter.spent()
            return self.meter.estimated(self.input_estimate)
        if self.sent and not self.unreachable:  # cut while the model had it: its input
            meter = UsageMeter(self.api, streamed=True, model=self.model, prices=prices)
            return meter.estimated(self.input_estimate)
        return Spent()
