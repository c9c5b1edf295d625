"""The Codex event mapper, fed recorded `codex exec --json` lines (Codex 0.171.0; no binary).

The recorded lines below were printed by the real CLI against tests/fakes/responses_api.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runners.codex_events import CodexEventMapper, TokenTotals, stderr_reason, summary
from runners.protocol import AGENT, RunEvent

THREAD = '{"type":"thread.started","thread_id":"01a22c35-215b-7e22-bdfe-8bed83049da4"}'
METADATA_WARNING = (
    '{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata '
    "for `fake-model` not found. Defaulting to fallback metadata; this can degrade performance "
    'and cause issues."}}'
)
TURN_STARTED = '{"type":"turn.started"}'
REASONING = (
    '{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"let me write"}}'
)
COMMAND_STARTED = (
    '{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":'
    '"/bin/bash -lc \'echo hello > out.txt\'","aggregated_output":"","exit_code":null,'
    '"status":"in_progress"}}'
)
COMMAND_DONE = (
    '{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":'
    '"/bin/bash -lc \'echo hello > out.txt\'","aggregated_output":"ok\\n","exit_code":0,'
    '"status":"completed"}}'
)
ANSWER = (
    '{"type":"item.completed","item":{"id":"item_3","type":"agent_message",'
    '"text":"DONE\\nwrote it"}}'
)
TURN_DONE = (
    '{"type":"turn.completed","usage":{"input_tokens":24,"cached_input_tokens":10,'
    '"cache_write_input_tokens":0,"output_tokens":12,"reasoning_output_tokens":5}}'
)
RECONNECTING = (
    '{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion: '
    'model melted)"}'
)
API_ERROR = '{"type":"error","message":"unexpected status 400 Bad Request: quota exceeded"}'
TURN_FAILED = (
    '{"type":"turn.failed","error":{"message":"unexpected status 400 Bad Request: quota exceeded"}}'
)


def feed(lines: list[str], **options: Any) -> tuple[CodexEventMapper, list[RunEvent]]:
    mapper = CodexEventMapper(**options)
    events: list[RunEvent] = []
    for line in lines:
        events += mapper.feed(line)
    return mapper, events


def kinds(events: list[RunEvent]) -> list[str]:
    return [e.kind for e in events]


def test_a_shell_turn_maps_to_session_progress_tool_usage_final() -> None:
    lines = [THREAD, METADATA_WARNING, TURN_STARTED, REASONING, COMMAND_STARTED, COMMAND_DONE]
    mapper, events = feed([*lines, ANSWER, TURN_DONE])
    assert kinds(events) == ["session", "progress", "tool", "usage", "final"]
    assert events[0].session_id == "01a22c35-215b-7e22-bdfe-8bed83049da4"
    assert events[1].text == "let me write"
    assert (events[2].tool, events[2].text) == ("shell", "/bin/bash -lc 'echo hello > out.txt'")
    # input_tokens already count the cached ones, output_tokens the reasoning ones.
    assert (events[3].input_tokens, events[3].output_tokens, events[3].cost_usd) == (24, 12, 0.0)
    assert events[4].text == "DONE\nwrote it" and events[4].structured is None
    assert mapper.done and mapper.finish(0) == []


def test_the_model_metadata_warning_is_dropped_but_other_error_items_are_shown() -> None:
    other = (
        '{"type":"item.completed","item":{"id":"i","type":"error","message":"disk almost full"}}'
    )
    _, events = feed([METADATA_WARNING, other])
    assert [(e.kind, e.text) for e in events] == [("progress", "codex warning: disk almost full")]


def test_commentary_before_more_work_is_progress_and_the_last_message_is_final() -> None:
    first = '{"type":"item.completed","item":{"id":"a","type":"agent_message","text":"Looking."}}'
    _, events = feed([THREAD, first, COMMAND_STARTED, ANSWER, TURN_DONE])
    assert [(e.kind, e.text) for e in events if e.kind in ("progress", "final")] == [
        ("progress", "Looking."),
        ("final", "DONE\nwrote it"),
    ]


def test_a_command_is_announced_once_even_when_only_its_completion_is_seen() -> None:
    _, started_and_done = feed([COMMAND_STARTED, COMMAND_DONE])
    _, done_only = feed([COMMAND_DONE])
    assert kinds(started_and_done) == ["tool"] and kinds(done_only) == ["tool"]


@pytest.mark.parametrize(
    ("item", "tool", "text"),
    [
        (
            {
                "type": "file_change",
                "changes": [{"path": "a.py", "kind": "update"}],
                "status": "completed",
            },
            "file_change",
            "update a.py",
        ),
        (
            {"type": "mcp_tool_call", "server": "docs", "tool": "search", "arguments": {"q": 1}},
            "docs.search",
            '{"q": 1}',
        ),
        ({"type": "web_search", "query": "codex exec json"}, "web_search", "codex exec json"),
    ],
)
def test_tool_items(item: dict[str, Any], tool: str, text: str) -> None:
    line = json.dumps({"type": "item.completed", "item": {"id": "x", **item}})
    _, events = feed([line])
    assert [(e.kind, e.tool, e.text) for e in events] == [("tool", tool, text)]


def test_a_plan_is_progress() -> None:
    line = json.dumps(
        {
            "type": "item.completed",
            "item": {
                "id": "t",
                "type": "todo_list",
                "items": [{"text": "read", "completed": True}, {"text": "fix"}],
            },
        }
    )
    assert [e.text for e in feed([line])[1]] == ["plan: read; fix"]


def test_structured_output_is_parsed_when_a_schema_was_asked_for() -> None:
    answer = json.dumps(
        {
            "type": "item.completed",
            "item": {"id": "m", "type": "agent_message", "text": '{"marker": "DONE"}'},
        }
    )
    _, events = feed([answer, TURN_DONE], want_structured=True)
    assert events[-1].structured == {"marker": "DONE"}
    _, without_schema = feed([answer, TURN_DONE])
    assert without_schema[-1].structured is None


@pytest.mark.parametrize("text", ["not json at all", "[1, 2]", '"a string"', ""])
def test_unparsable_structured_output_keeps_the_text_and_has_no_structured(text: str) -> None:
    answer = json.dumps(
        {"type": "item.completed", "item": {"id": "m", "type": "agent_message", "text": text}}
    )
    _, events = feed([answer, TURN_DONE], want_structured=True)
    assert (events[-1].kind, events[-1].text, events[-1].structured) == ("final", text, None)


def test_a_turn_with_no_message_ends_with_an_empty_final() -> None:
    _, events = feed([THREAD, COMMAND_STARTED, TURN_DONE])
    assert events[-1].kind == "final" and events[-1].text == ""


def test_usage_of_a_resumed_thread_counts_only_this_turn() -> None:
    mapper, events = feed([TURN_DONE], usage_before=TokenTotals(20, 10))
    usage = next(e for e in events if e.kind == "usage")
    assert (usage.input_tokens, usage.output_tokens) == (4, 2)
    assert mapper.totals_after == TokenTotals(24, 12)


def test_a_ledger_larger_than_the_totals_is_ignored() -> None:
    _, events = feed([TURN_DONE], usage_before=TokenTotals(1000, 1000))
    usage = next(e for e in events if e.kind == "usage")
    assert (usage.input_tokens, usage.output_tokens) == (24, 12)


def test_retries_are_progress_and_a_failed_turn_is_one_agent_error() -> None:
    mapper, events = feed([THREAD, TURN_STARTED, RECONNECTING, API_ERROR, TURN_FAILED])
    assert kinds(events) == ["session", "progress", "progress", "error"]
    assert events[1].text.startswith("codex: Reconnecting... 1/5")
    assert events[-1].code == AGENT and "quota exceeded" in events[-1].text
    assert mapper.finish(1, "stderr noise") == []


def test_retries_that_then_succeed_end_with_a_final() -> None:
    _, events = feed([THREAD, RECONNECTING, ANSWER, TURN_DONE])
    assert kinds(events)[-1] == "final"
    assert "error" not in kinds(events)


@pytest.mark.parametrize(
    ("lines", "status", "stderr", "expected"),
    [
        ([THREAD, API_ERROR], 1, "", "codex exited with status 1: unexpected status 400"),
        (
            [THREAD],
            2,
            "error: unexpected argument '--bogus'",
            "status 2: error: unexpected argument",
        ),
        ([], 101, "", "status 101: no output"),
        ([THREAD, TURN_STARTED], 0, "", "codex ended without completing the turn"),
    ],
)
def test_a_run_that_ends_without_a_turn_result_is_an_error(
    lines: list[str], status: int, stderr: str, expected: str
) -> None:
    mapper, _ = feed(lines)
    [event] = mapper.finish(status, stderr)
    assert event.kind == "error" and event.code == AGENT and expected in event.text


WAITING = (
    '{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error '
    'sending request)"}'
)


def test_waiting_for_the_network_is_dated_from_the_first_report_until_codex_gets_through() -> None:
    mapper = CodexEventMapper()
    mapper.feed(THREAD, now=1.0)
    assert mapper.waiting_since is None
    mapper.feed(WAITING, now=3.0)
    mapper.feed(WAITING, now=11.0)
    assert mapper.waiting_since == 3.0
    mapper.feed(TURN_STARTED, now=12.0)
    assert mapper.waiting_since is None
    mapper.feed(WAITING, now=20.0)
    [event] = mapper.give_up(120)
    assert event.kind == "error" and event.code == AGENT
    assert "unreachable for 120 s" in event.text and "waiting for network" in event.text
    assert mapper.finish(1) == [] and mapper.give_up(120) == []


def test_the_error_reason_skips_codex_routine_stderr_lines() -> None:
    stderr = (
        "WARNING: proceeding, even though we could not create PATH aliases: …\n"
        "Reading additional input from stdin...\n"
        "Error: thread/resume: thread/resume failed: no rollout found for thread id x\n"
    )
    assert stderr_reason(stderr) == (
        "Error: thread/resume: thread/resume failed: no rollout found for thread id x"
    )
    [event] = CodexEventMapper().finish(1, stderr)
    assert "WARNING" not in event.text and "no rollout found" in event.text


def test_non_events_are_ignored() -> None:
    _, events = feed(
        ["", "   ", "Reading additional input from stdin...", "[1]", '{"type": "x.y"}', "{bad"]
    )
    assert events == []


def test_nothing_is_mapped_after_the_turn_ended() -> None:
    _, events = feed([ANSWER, TURN_DONE, ANSWER, TURN_DONE, TURN_FAILED])
    assert kinds(events) == ["usage", "final"]


def test_summary_is_the_first_visible_line_shortened() -> None:
    assert summary("\n\n  first line  \nsecond") == "first line"
    assert summary("x" * 500, limit=10) == "x" * 9 + "…"


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_event_like = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "thread.started",
                "item.started",
                "item.completed",
                "item.updated",
                "turn.completed",
                "turn.failed",
                "error",
                "turn.started",
            ]
        )
    },
    optional={
        "thread_id": _json_values,
        "item": st.fixed_dictionaries(
            {},
            optional={
                "type": st.sampled_from(
                    [
                        "agent_message",
                        "reasoning",
                        "command_execution",
                        "file_change",
                        "error",
                        "todo_list",
                    ]
                ),
                "id": _json_values,
                "text": _json_values,
                "command": _json_values,
                "changes": _json_values,
                "items": _json_values,
                "message": _json_values,
            },
        ),
        "usage": _json_values,
        "error": _json_values,
        "message": _json_values,
    },
)


@given(
    st.lists(st.one_of(_event_like.map(json.dumps), st.text(max_size=40)), max_size=12),
    st.integers(0, 255),
)
def test_any_line_sequence_yields_valid_events_and_exactly_one_terminal(
    lines: list[str], status: int
) -> None:
    mapper = CodexEventMapper(want_structured=True)
    events: list[RunEvent] = []
    for line in lines:
        events += mapper.feed(line)
    events += mapper.finish(status, "")
    terminal = [e for e in events if e.kind in ("final", "error")]
    assert len(terminal) == 1 and events[-1] is terminal[0]
    assert all(e.input_tokens >= 0 and e.output_tokens >= 0 for e in events)
