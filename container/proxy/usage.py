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
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from container.proxy.grants import Spent
from container.proxy.prices import PRICES, Price, cost_usd

MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_JSON_BYTES = 16 * 1024 * 1024
ANTHROPIC, OPENAI = "anthropic", "openai"


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
                return
            self._skipping = False
            data = data[cut + 1 :]
        first = data.find(b"\n")
        if first < 0:
            self._tail += data
            if len(self._tail) > MAX_LINE_BYTES:
                self._tail, self._skipping = b"", True
            return
        # The line the tail was waiting for ends here; then whole lines; then a new tail. Most
        # of a long answer is text deltas: the lines are only looked at near a "usage", and the
        # search runs in place (no copy of the chunk).
        self._line_done(self._tail + data[:first])
        last = data.rfind(b"\n")
        if last > first and data.find(b'"usage"', first + 1, last) >= 0:
            for line in data[first + 1 : last].split(b"\n"):
                self._line_done(line)
        self._tail = data[last + 1 :]
        if len(self._tail) > MAX_LINE_BYTES:
            self._tail, self._skipping = b"", True

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
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = event.get("response")
            if isinstance(response, dict):
                self.model = response.get("model") or self.model
                self._take_openai(response.get("usage"))

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

    def spent(self) -> Spent:
        c = self.counts
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
