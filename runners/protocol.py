"""The wire protocol between the host and a runner process.

The host writes exactly one `RunRequest` as a JSON line to the runner's stdin, then closes stdin
(a spare runner, started before its turn was known, first reads a `TurnSetup` line and answers
it with one blank line: runners/warm.py).
The runner writes `RunEvent` JSON lines to stdout, one per line, and exits. Anything else it
prints on stdout is a protocol error; its stderr is diagnostics only.

`RunSpec` is the host-side envelope (never sent to the runner): which agent runs, for which group,
on which workspace, with which limits. Every backend (local process, Docker) takes a `RunSpec` and
yields `RunEvent`s, so the tribunal does not know where a turn runs.

This module is imported inside the container too: standard library and pydantic only.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# The agents that reach a model: what a group's roles may be played by, and what the credential
# proxy grants a token to.
ModelAgent = Literal["claude", "codex"]
# What a runner process runs: a model agent, or `command`, the engine's own checks (resolve's
# tests) run as given, with no model and no credential (runners/command.py).
AgentType = Literal["claude", "codex", "command"]
M = TypeVar("M", bound=BaseModel)
EventKind = Literal["progress", "tool", "final", "usage", "session", "error", "queued"]

# Error codes a backend or runner puts on an `error` event. The engine records them on the turn.
CRASHED = "crashed"  # the runner exited without a final event
IDLE_TIMEOUT = "idle_timeout"  # no event for too long
HARD_TIMEOUT = "hard_timeout"  # the turn ran past its wall-clock limit
OUTPUT_CAP = "output_cap"  # the runner printed more than allowed
PROTOCOL = "protocol"  # the runner printed something that is not a RunEvent
OUT_OF_MEMORY = "out_of_memory"  # killed by the memory limit
AGENT = "agent"  # the agent itself reported a failure (API error, turn cap, ...)
SETUP = "setup"  # the turn could not start: the deployment is wrong (e.g. an unwritable workspace)
BUDGET = "budget"  # the credential proxy refused a request: the task's budget is spent
# The container engine running the turn stopped answering (it is drained, container/engine_set.py):
# the turn is not the agent's failure; the engine records it as interrupted and runs it again.
ENGINE_LOST = "engine_lost"
# The final is not the model's last answer as the credential proxy saw it: someone else wrote
# it (container/proxy/finals.py). The turn fails; the answer is never used.
UNVERIFIED = "unverified"


class ProtocolError(ValueError):
    """A line that is not a valid protocol message."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# Bounds of one check: a command is a shell line or a short script, not a file's worth of code.
MAX_CHECKS = 64
MAX_CHECK_COMMAND_CHARS = 64 * 1024
MAX_CHECK_TIMEOUT_S = 24 * 3600.0


class Check(_Model):
    """One command for the `command` runner: run with `/bin/sh -c` in the request's cwd, killed
    at `timeout_s`. `id` names it in the results (resolve's test ids)."""

    id: str = Field(min_length=1, max_length=64)
    command: str = Field(min_length=1, max_length=MAX_CHECK_COMMAND_CHARS)
    timeout_s: float = Field(gt=0, le=MAX_CHECK_TIMEOUT_S)


class CheckResult(_Model):
    """What one check did, as the `command` runner saw it (never what anyone said it did).

    exit_status: the shell's exit status; None when it did not exit by itself (killed by a
    signal, ours at the timeout included) or never started. output_tail: the last few KiB of
    its stdout and stderr together, as text (undecodable bytes replaced); output_bytes: all of
    it. The output is the command's: hostile text, to be quoted wherever it is shown."""

    id: str
    exit_status: int | None = None
    timed_out: bool = False
    signalled: bool = False
    signal: int | None = None
    started: bool = True
    output_tail: str = ""
    output_bytes: int = Field(default=0, ge=0)
    duration_s: float = Field(default=0.0, ge=0)


class CheckReport(_Model):
    """The `structured` of the `command` runner's final event: one result per check, in order."""

    checks: list[CheckResult]


class RunRequest(_Model):
    role: str
    prompt: str
    system_prompt: str = ""
    model: str | None = None
    resume_session_id: str | None = None
    output_schema: dict[str, Any] | None = None
    read_only: bool = True
    cwd: str = "/workspace"
    max_turns: int = Field(default=40, ge=1)
    max_budget_usd: float | None = None
    # For the `command` runner only: what to run. The model runners ignore it.
    checks: tuple[Check, ...] = Field(default=(), max_length=MAX_CHECKS)


class RunEvent(_Model):
    """One event from a runner. Which fields are set depends on `kind`:

    progress: text (a short human-readable status line)
    tool:     tool (tool name), text (a short summary of its input)
    final:    text (the agent's full answer), structured (the JSON-schema output, when asked)
    usage:    input_tokens, output_tokens, cost_usd
    session:  session_id (to resume this agent's conversation next turn)
    error:    code (one of the constants above), text (what happened)
    queued:   text (why the turn waits to start, e.g. for a runner slot: container/slots.py);
              sent by a backend before the runner starts, never by a runner
    """

    kind: EventKind
    text: str = ""
    tool: str | None = None
    structured: dict[str, Any] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    session_id: str | None = None
    code: str | None = None


class RunSpec(_Model):
    """Host side: what to run where. Backends turn this into a process or a container exec."""

    group: str
    agent: AgentType
    request: RunRequest
    workspace: str | None = None
    # A task worktree's git metadata on the host (rooms/work/worktrees.py): its own git dir and the
    # repository's common git dir, found from the repository's side. Container backends mount
    # them read-only at these paths so git works inside; None: the workspace is used in place.
    git_dir: str | None = None
    git_common_dir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    idle_timeout_s: float = Field(default=300.0, gt=0)
    hard_timeout_s: float = Field(default=1800.0, gt=0)
    max_output_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    # The task's tokens left when the turn starts (the dollars left are request.max_budget_usd);
    # the credential proxy refuses the turn's requests past them. None: no ceiling.
    tokens_left: int | None = Field(default=None, ge=0)


# The argument that starts a spare runner instead of a turn of one type: `python -m runners --warm`.
WARM = "--warm"


class TurnSetup(_Model):
    """Sent to a spare runner (`python -m runners --warm`, runners/warm.py) as one line before
    the request: what a runner started ahead learns only when it is given a turn. `env` is the
    runner's whole environment for the turn (it replaces the one the spare started with, which
    held only what every turn shares: container/spares.py); `cwd` is where it runs."""

    agent: AgentType
    cwd: str = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)


def encode(message: RunRequest | RunEvent | TurnSetup) -> str:
    """One protocol line, newline included."""
    return message.model_dump_json(exclude_defaults=True) + "\n"


def decode_event(line: str | bytes) -> RunEvent:
    return _decode(RunEvent, line)


def decode_request(line: str | bytes) -> RunRequest:
    return _decode(RunRequest, line)


def decode_setup(line: str | bytes) -> TurnSetup:
    return _decode(TurnSetup, line)


def _decode(model: type[M], line: str | bytes) -> M:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {text[:200]!r}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ProtocolError(f"not a {model.__name__}: {exc.errors()[0]['msg']}") from exc


def error(code: str, text: str) -> RunEvent:
    return RunEvent(kind="error", code=code, text=text)
