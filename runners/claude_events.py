"""Turn Claude Agent SDK messages into protocol events (pure: no process, no binary).

`Translator.translate(message)` is fed every message `claude_agent_sdk.query()` yields, in order,
and returns the events to write for it:

- `SystemMessage(init)` → `session` (as soon as the id is known; again only if it changes);
- `AssistantMessage` → `progress` for text (a snippet), `tool` for each tool call (name and a
  short summary of the input); thinking is not shown;
- `UserMessage` carrying a failed tool result → `progress` ("Bash failed: …"), so a denied or
  broken tool call is visible while the agent works;
- `ResultMessage` → one `usage` (cache tokens count as input), then either `final` (the result
  text, and `structured` = the schema output when one was asked for) or `error` (code `agent`:
  turn cap, budget cap, API error status, execution error).
"""

from __future__ import annotations

import json
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from runners.protocol import AGENT, RunEvent, error

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


def _tool_result_text(block: ToolResultBlock) -> str:
    content = block.content
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""


def usage_event(result: ResultMessage) -> RunEvent:
    usage = result.usage or {}

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) else 0

    return RunEvent(
        kind="usage",
        input_tokens=count("input_tokens")
        + count("cache_creation_input_tokens")
        + count("cache_read_input_tokens"),
        output_tokens=count("output_tokens"),
        cost_usd=float(result.total_cost_usd or 0.0),
    )


def failure_text(result: ResultMessage) -> str:
    """Why a result is an error, in words a person in the chat room can act on."""
    reasons = {
        "error_max_turns": f"the agent hit its turn cap after {result.num_turns} turns",
        "error_max_budget_usd": "the agent hit its budget cap",
        "error_during_execution": "Claude Code failed while running the turn",
    }
    if result.subtype in reasons:
        parts = [f"{result.subtype}: {reasons[result.subtype]}"]
    elif result.subtype == "success":  # is_error on a "success": the API call failed
        parts = ["the turn failed"]
    else:
        parts = [f"{result.subtype}: the agent reported an error"]
    if result.api_error_status is not None:
        parts.append(f"API error status {result.api_error_status}")
    if result.errors:
        parts.append("; ".join(result.errors))
    if result.result:
        parts.append(one_line(result.result, 500))
    return " — ".join(parts)


def is_failure(result: ResultMessage) -> bool:
    return result.is_error or result.subtype != "success"


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

    def translate(self, message: object) -> list[RunEvent]:
        if isinstance(message, SystemMessage):
            return self._session(message.data.get("session_id"))
        if isinstance(message, AssistantMessage):
            return self._session(message.session_id) + self._assistant(message)
        if isinstance(message, UserMessage):
            return self._tool_failures(message)
        if isinstance(message, ResultMessage):
            return self._session(message.session_id) + self._result(message)
        return []  # stream events, rate-limit notices, task messages: not shown

    def _assistant(self, message: AssistantMessage) -> list[RunEvent]:
        events: list[RunEvent] = []
        for block in message.content:
            if isinstance(block, TextBlock) and block.text.strip():
                events.append(RunEvent(kind="progress", text=one_line(block.text, SNIPPET_CHARS)))
            elif isinstance(block, ToolUseBlock):
                self._tool_names[block.id] = block.name
                summary = summarize_tool_input(block.name, block.input)
                events.append(RunEvent(kind="tool", tool=block.name, text=summary))
        return events

    def _tool_failures(self, message: UserMessage) -> list[RunEvent]:
        if isinstance(message.content, str):
            return []
        events: list[RunEvent] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock) and block.is_error:
                name = self._tool_names.get(block.tool_use_id, "tool")
                detail = one_line(_tool_result_text(block), SNIPPET_CHARS)
                events.append(RunEvent(kind="progress", text=f"{name} failed: {detail}"))
        return events

    def _result(self, result: ResultMessage) -> list[RunEvent]:
        events = [usage_event(result)]
        if is_failure(result):
            events.append(error(AGENT, failure_text(result)))
            return events
        structured = result.structured_output if self.wants_structured else None
        if structured is not None and not isinstance(structured, dict):
            # The protocol carries an object; a schema whose root is not an object is wrapped.
            structured = {"value": structured}
        events.append(RunEvent(kind="final", text=result.result or "", structured=structured))
        return events
