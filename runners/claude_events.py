"""Turn Claude Code's stream-json messages into protocol events (pure: no process, no binary).

`Translator.translate(message)` is fed every message object the CLI writes on its stdout
(`--output-format stream-json`, one JSON object a line), in order, and returns the events to
write for it. The messages are read as plain dicts, the way Claude Code writes them (the
fixtures in tests/runners/fixtures/claude_stream were recorded from 2.1.332), with the field
names the Agent SDK's own parser reads; no SDK is imported (it costs a turn ~0.5 s to load):

- `system` (`init`, carries `session_id`) → `session` (as soon as the id is known; again only
  if it changes);
- `assistant` (`message.content`: blocks) → `progress` for text (a snippet), `tool` for each
  `tool_use` block (name and a short summary of the input); thinking is not shown;
- `user` carrying a failed `tool_result` → `progress` ("Bash failed: …"), so a denied or
  broken tool call is visible while the agent works;
- `result` → one `usage` (cache tokens count as input), then either `final` (the `result`
  text, and `structured` = the `structured_output` when a schema was asked for) or `error`
  (code `agent`: turn cap, budget cap, API error status, execution error).

Anything else (control responses, stream events, rate-limit notices, task messages) is not shown.
"""

from __future__ import annotations

import json
from typing import Any

from runners.protocol import AGENT, RunEvent, error

Message = dict[str, Any]

SNIPPET_CHARS = 300
SUMMARY_CHARS = 200

# Which input field says best what a tool call does, by tool name; others get compact JSON.
_SUMMARY_KEYS = {
    "Bash": ("command",),
    "Read": ("file_path",),
    "Write": ("file_path",),
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "Grep": ("pattern", "path"),
    "Glob": ("pattern", "path"),
    "WebFetch": ("url",),
    "WebSearch": ("query",),
    "Agent": ("description",),
    "Task": ("description",),
}


def one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def summarize_tool_input(name: str, args: dict[str, Any]) -> str:
    keys = _SUMMARY_KEYS.get(name)
    if keys:
        parts = [str(args[k]) for k in keys if isinstance(args.get(k), str | int | float)]
        if parts:
            return one_line(" ".join(parts), SUMMARY_CHARS)
    return one_line(json.dumps(args, ensure_ascii=False, sort_keys=True), SUMMARY_CHARS)


def _tool_result_text(block: Message) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""


def usage_event(result: Message) -> RunEvent:
    usage = result.get("usage")
    if not isinstance(usage, dict):
        usage = {}

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    cost = result.get("total_cost_usd")
    return RunEvent(
        kind="usage",
        input_tokens=count("input_tokens")
        + count("cache_creation_input_tokens")
        + count("cache_read_input_tokens"),
        output_tokens=count("output_tokens"),
        cost_usd=float(cost) if isinstance(cost, int | float) else 0.0,
    )


def failure_text(result: Message) -> str:
    """Why a result is an error, in words a person in the chat room can act on."""
    subtype = result.get("subtype")
    reasons = {
        "error_max_turns": f"the agent hit its turn cap after {result.get('num_turns')} turns",
        "error_max_budget_usd": "the agent hit its budget cap",
        "error_during_execution": "Claude Code failed while running the turn",
    }
    if subtype in reasons:
        parts = [f"{subtype}: {reasons[subtype]}"]
    elif subtype == "success":  # is_error on a "success": the API call failed
        parts = ["the turn failed"]
    else:
        parts = [f"{subtype}: the agent reported an error"]
    if result.get("api_error_status") is not None:
        parts.append(f"API error status {result['api_error_status']}")
    errors = result.get("errors")
    if isinstance(errors, list) and errors:
        parts.append("; ".join(str(e) for e in errors))
    text = result.get("result")
    if isinstance(text, str) and text:
        parts.append(one_line(text, 500))
    return " — ".join(parts)


def is_failure(result: Message) -> bool:
    return bool(result.get("is_error")) or result.get("subtype") != "success"


def _blocks(message: Message) -> list[Message]:
    inner = message.get("message")
    content = inner.get("content") if isinstance(inner, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


class Translator:
    """Stateful: remembers the session id already announced and whether a schema was asked."""

    def __init__(self, *, wants_structured: bool) -> None:
        self.wants_structured = wants_structured
        self.session_id: str | None = None
        self._tool_names: dict[str, str] = {}  # tool_use id → name, to label failed results

    def _session(self, session_id: object) -> list[RunEvent]:
        if not isinstance(session_id, str) or not session_id or session_id == self.session_id:
            return []
        self.session_id = session_id
        return [RunEvent(kind="session", session_id=session_id)]

    def translate(self, message: Message) -> list[RunEvent]:
        kind = message.get("type")
        if kind == "system":
            return self._session(message.get("session_id"))
        if kind == "assistant":
            return self._session(message.get("session_id")) + self._assistant(message)
        if kind == "user":
            return self._tool_failures(message)
        if kind == "result":
            return self._session(message.get("session_id")) + self._result(message)
        return []  # control responses, stream events, rate-limit notices, task messages

    def _assistant(self, message: Message) -> list[RunEvent]:
        events: list[RunEvent] = []
        for block in _blocks(message):
            kind = block.get("type")
            text = block.get("text")
            if kind == "text" and isinstance(text, str) and text.strip():
                events.append(RunEvent(kind="progress", text=one_line(text, SNIPPET_CHARS)))
            elif kind == "tool_use":
                name = str(block.get("name", "tool"))
                self._tool_names[str(block.get("id"))] = name
                args = block.get("input")
                summary = summarize_tool_input(name, args if isinstance(args, dict) else {})
                events.append(RunEvent(kind="tool", tool=name, text=summary))
        return events

    def _tool_failures(self, message: Message) -> list[RunEvent]:
        events: list[RunEvent] = []
        for block in _blocks(message):
            if block.get("type") == "tool_result" and block.get("is_error"):
                name = self._tool_names.get(str(block.get("tool_use_id")), "tool")
                detail = one_line(_tool_result_text(block), SNIPPET_CHARS)
                events.append(RunEvent(kind="progress", text=f"{name} failed: {detail}"))
        return events

    def _result(self, result: Message) -> list[RunEvent]:
        events = [usage_event(result)]
        if is_failure(result):
            events.append(error(AGENT, failure_text(result)))
            return events
        structured = result.get("structured_output") if self.wants_structured else None
        if structured is not None and not isinstance(structured, dict):
            # The protocol carries an object; a schema whose root is not an object is wrapped.
            structured = {"value": structured}
        text = result.get("result")
        text = text if isinstance(text, str) else ""
        events.append(RunEvent(kind="final", text=text, structured=structured))
        return events
