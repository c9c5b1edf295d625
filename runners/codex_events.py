"""Codex `exec --json` events → `RunEvent`s. Pure: lines in, events out, no process.

Codex 0.171 prints one JSON object per line (schema: `codex-rs/exec/src/exec_events.rs`):
`thread.started{thread_id}`, `turn.started`, `item.started|updated|completed{item}`,
`turn.completed{usage}`, `turn.failed{error{message}}`, `error{message}`.

Mapping:
- thread.started → `session` (the thread id resumes the conversation next turn);
- agent_message → the answer so far; an earlier message that another item follows is shown as
  `progress`, the last one becomes `final` when the turn completes (parsed as JSON into
  `structured` when an output schema was asked for);
- reasoning, todo_list, and non-fatal `error` items → `progress`; command_execution,
  file_change, mcp_tool_call, web_search → `tool` (once per item, when it starts);
- turn.completed → `usage` (OpenAI's input_tokens already include cached tokens and
  output_tokens include reasoning tokens), then `final`;
- turn.failed → `error` (code "agent").

Top-level `error` events are not fatal by themselves: Codex reports each retry that way
("Reconnecting... 2/5 (…)") and then either succeeds or ends the turn with `turn.failed`. They
are shown as progress, and the last one explains a run that ends without `turn.completed`.
When the model API cannot be reached at all, Codex keeps reporting "Reconnecting... waiting for
network (…)" with a growing backoff and never gives up; `waiting_since` tells the runner since
when, so that it can end the turn (the progress lines would otherwise keep an idle timeout away).
The `error` item Codex emits for a model it has no metadata for ("Model metadata for `x` not
found. Defaulting to fallback metadata; …") is harmless and dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from runners.protocol import AGENT, RunEvent, error

SUMMARY_CHARS = 300
NETWORK_WAIT = "waiting for network"
TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search"}


@dataclass(frozen=True)
class TokenTotals:
    input_tokens: int = 0
    output_tokens: int = 0


def summary(text: str, limit: int = SUMMARY_CHARS) -> str:
    """The first non-blank line, shortened: progress is a status line, not the full text."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


# Lines Codex writes to stderr on every run; they never explain a failure.
STDERR_NOISE = ("WARNING: proceeding, even though", "Reading additional input from stdin")
# What `codex exec resume` says when the thread is not in CODEX_HOME (a new container, a wiped
# home): "thread/resume failed: no rollout found for thread id <id>".
THREAD_LOST = "no rollout found for thread id"


def stderr_reason(stderr: str, lines: int = 3, limit: int = 1000) -> str:
    """The last few meaningful stderr lines, without Codex's routine warnings."""
    kept = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    kept = [ln for ln in kept if not ln.startswith(STDERR_NOISE)]
    return "\n".join(kept[-lines:])[-limit:]


def _is_metadata_warning(message: str) -> bool:
    return message.startswith("Model metadata for") and "fallback metadata" in message


class CodexEventMapper:
    def __init__(self, want_structured: bool = False, usage_before: TokenTotals | None = None):
        self.want_structured = want_structured
        self.usage_before = usage_before or TokenTotals()
        self.thread_id: str | None = None
        self.totals_after: TokenTotals | None = None  # the thread's totals after this turn
        self.answer: str | None = None
        self._answer_shown = False
        self._announced: set[str] = set()
        self._last_error = ""
        self.waiting_since: float | None = None  # first "waiting for network" report
        self.done = False  # a final or error was produced

    def feed(self, line: str | bytes, now: float = 0.0) -> list[RunEvent]:
        """The events for one line; `now` (monotonic seconds) dates "waiting for network"."""
        text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
        if not text.strip():
            return []
        try:
            event = json.loads(text)
        except ValueError:
            return []  # not an event (Codex writes its diagnostics to stderr; be lenient)
        if not isinstance(event, dict) or self.done:
            return []
        kind = event.get("type")
        if kind != "error":
            self.waiting_since = None  # Codex got through (or moved on)
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            self.thread_id = event["thread_id"]
            return [RunEvent(kind="session", session_id=self.thread_id)]
        if kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            return self._item(kind, item) if isinstance(item, dict) else []
        if kind == "turn.completed":
            return self._completed(event.get("usage"))
        if kind == "turn.failed":
            message = _message(event.get("error")) or self._last_error or "the turn failed"
            self.done = True
            return [error(AGENT, f"codex: {message}")]
        if kind == "error":
            message = _message(event)
            self._last_error = message or self._last_error
            if NETWORK_WAIT in message and self.waiting_since is None:
                self.waiting_since = now
            return [RunEvent(kind="progress", text=summary(f"codex: {message}"))] if message else []
        return []

    def finish(self, exit_status: int, stderr_tail: str = "") -> list[RunEvent]:
        """After Codex exited: the terminal event if the stream did not bring one."""
        if self.done:
            return []
        self.done = True
        reason = self._last_error or stderr_reason(stderr_tail) or "no output"
        if exit_status != 0:
            return [error(AGENT, f"codex exited with status {exit_status}: {reason}")]
        return [error(AGENT, f"codex ended without completing the turn: {reason}")]

    def give_up(self, seconds: float) -> list[RunEvent]:
        """The runner stops a Codex that has been waiting for the network too long."""
        if self.done:
            return []
        self.done = True
        reason = self._last_error or "no connection"
        return [error(AGENT, f"model API unreachable for {seconds:.0f} s, gave up: {reason}")]

    def _item(self, kind: str, item: dict[str, Any]) -> list[RunEvent]:
        item_type = item.get("type")
        item_id = str(item.get("id", ""))
        if item_type == "agent_message":
            if kind != "item.completed" or not isinstance(item.get("text"), str):
                return []
            events = self._show_pending_answer()
            self.answer, self._answer_shown = item["text"], False
            return events
        if item_type in TOOL_ITEMS:
            if item_id and item_id in self._announced:
                return []
            self._announced.add(item_id)
            return [*self._show_pending_answer(), _tool_event(item_type, item)]
        if kind != "item.completed":
            return []
        if item_type == "reasoning":
            text = summary(str(item.get("text", "")))
            return (
                [*self._show_pending_answer(), RunEvent(kind="progress", text=text)] if text else []
            )
        if item_type == "todo_list":
            steps = [
                str(s.get("text", "")) for s in _list(item.get("items")) if isinstance(s, dict)
            ]
            return [RunEvent(kind="progress", text=summary("plan: " + "; ".join(steps)))]
        if item_type == "error":
            message = str(item.get("message", ""))
            if not message or _is_metadata_warning(message):
                return []
            return [RunEvent(kind="progress", text=summary(f"codex warning: {message}"))]
        return []

    def _show_pending_answer(self) -> list[RunEvent]:
        """An agent message that more work follows was commentary: show it as progress."""
        if self.answer is None or self._answer_shown:
            return []
        self._answer_shown = True
        text = summary(self.answer)
        return [RunEvent(kind="progress", text=text)] if text else []

    def _completed(self, usage: object) -> list[RunEvent]:
        self.done = True
        events = []
        if isinstance(usage, dict):
            totals = TokenTotals(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")))
            self.totals_after = totals
            before = self.usage_before
            if (
                before.input_tokens > totals.input_tokens
                or before.output_tokens > totals.output_tokens
            ):
                before = TokenTotals()  # the ledger is not about this thread's history
            events.append(
                RunEvent(
                    kind="usage",
                    input_tokens=totals.input_tokens - before.input_tokens,
                    output_tokens=totals.output_tokens - before.output_tokens,
                )
            )
        text = self.answer or ""
        events.append(RunEvent(kind="final", text=text, structured=self._structured(text)))
        return events

    def _structured(self, text: str) -> dict[str, Any] | None:
        if not self.want_structured:
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return None  # the text still goes out; the engine falls back to the marker line
        return value if isinstance(value, dict) else None


def _tool_event(item_type: str, item: dict[str, Any]) -> RunEvent:
    if item_type == "command_execution":
        return RunEvent(kind="tool", tool="shell", text=summary(str(item.get("command", ""))))
    if item_type == "file_change":
        changes = [
            f"{c.get('kind', 'change')} {c.get('path', '?')}"
            for c in _list(item.get("changes"))
            if isinstance(c, dict)
        ]
        return RunEvent(kind="tool", tool="file_change", text=summary(", ".join(changes)))
    if item_type == "mcp_tool_call":
        name = f"{item.get('server', '?')}.{item.get('tool', '?')}"
        return RunEvent(kind="tool", tool=name, text=summary(json.dumps(item.get("arguments"))))
    return RunEvent(kind="tool", tool="web_search", text=summary(str(item.get("query", ""))))


def _message(value: object) -> str:
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    return ""


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
