"""`python -m runners claude`: one agent turn through the Claude Agent SDK (Claude Code CLI).

Reads one `RunRequest` line on stdin, runs `claude_agent_sdk.query()`, writes `RunEvent` lines as
the messages arrive (see `runners.claude_events`), exits 0 after a `final`, 1 after an `error`.

How the CLI is configured, and why:

- `setting_sources=[]`, `strict_mcp_config=True`: the workspace is untrusted; its
  `.claude/settings.json` could define hooks and its `.mcp.json` could start servers.
- `verbatim_prompts=True`: the prompt is assembled from chat messages and other agents' output,
  so an `@/path` inside it must stay text, not make Claude Code attach a local file.
- `permission_mode="bypassPermissions"` with `IS_SANDBOX=1`: in `-p` mode nobody can answer a
  permission prompt. `acceptEdits` lets Edit/Write run but denies Bash ("This command can't be
  checked before it runs"), and bypassPermissions alone is refused as root
  ("--dangerously-skip-permissions cannot be used with root/sudo privileges"); with IS_SANDBOX=1
  both Bash and Edit run, as root or not (checked with Claude Code 2.1.332). The isolation is
  the container's job, not the CLI's.
- `read_only=True` (reviewer, arbiter): the file-writing tools are removed from the model's
  context (`READ_ONLY_DISALLOWED`). Bash stays, because a reviewer must run the tests. In a
  container the workspace is mounted read-only, so Bash cannot write either; with the local
  backend there is no such mount and a read-only agent's Bash *can* write to the workspace.
- `output_schema` → `output_format={"type": "json_schema", ...}`: Claude Code offers the model a
  `StructuredOutput` tool with that schema and puts the tool's input in
  `ResultMessage.structured_output` (see tests/fakes/messages_api.py).
- Environment: no telemetry, no auto-update, no nonessential traffic, and a writable HOME
  (Claude Code keeps its config and session transcripts there; `resume` needs the same HOME and
  cwd as the turn that created the session). An unwritable HOME is replaced by a temp dir, which
  makes the turn work but loses its session for resuming.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import AsyncGenerator
from typing import Any, cast

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKError, query

from runners._io import EventWriter, run_main
from runners.claude_events import Translator
from runners.protocol import AGENT, RunEvent, RunRequest, error

# Tools that change files. MultiEdit no longer exists in Claude Code 2.x; listed for older CLIs.
# EnterWorktree creates git worktrees, i.e. writes into the repository.
READ_ONLY_DISALLOWED = ["Write", "Edit", "MultiEdit", "NotebookEdit", "EnterWorktree"]

QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "IS_SANDBOX": "1",
}

# Messages from the CLI can be large (a tool result with a whole file); the SDK default is 1 MiB.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024


def writable_home(environ: dict[str, str] | None = None) -> str:
    """HOME if it is a writable directory, else a fresh temp dir (sessions will not persist)."""
    home = (environ if environ is not None else dict(os.environ)).get("HOME", "")
    if home and os.path.isdir(home) and os.access(home, os.W_OK | os.X_OK):
        return home
    fallback = tempfile.mkdtemp(prefix="tribunal-claude-home-")
    print(f"runner: HOME {home!r} is not writable; using {fallback}", file=sys.stderr)
    return fallback


def working_dir(request: RunRequest) -> str:
    """request.cwd when it exists (in a container: /workspace), else where the runner started."""
    return request.cwd if os.path.isdir(request.cwd) else os.getcwd()


def build_options(
    request: RunRequest, *, home: str, cli_path: str | None = None
) -> ClaudeAgentOptions:
    system_prompt: Any = None
    if request.system_prompt:
        # Keep Claude Code's own prompt (tool use, environment) and add the role's on top.
        system_prompt = {"type": "preset", "preset": "claude_code", "append": request.system_prompt}
    output_format = None
    if request.output_schema is not None:
        output_format = {"type": "json_schema", "schema": request.output_schema}
    return ClaudeAgentOptions(
        cwd=working_dir(request),
        model=request.model,
        max_turns=request.max_turns,
        max_budget_usd=request.max_budget_usd,
        system_prompt=system_prompt,
        resume=request.resume_session_id,
        output_format=output_format,
        disallowed_tools=list(READ_ONLY_DISALLOWED) if request.read_only else [],
        permission_mode="bypassPermissions",
        setting_sources=[],
        strict_mcp_config=True,
        verbatim_prompts=True,
        env={**QUIET_ENV, "HOME": home},
        stderr=_forward_stderr,
        max_buffer_size=MAX_MESSAGE_BYTES,
        cli_path=cli_path or os.environ.get("TRIBUNAL_CLAUDE_CLI") or None,
    )


def _forward_stderr(line: str) -> None:
    print(f"claude: {line}", file=sys.stderr)


async def run_turn(request: RunRequest, out: EventWriter) -> None:
    options = build_options(request, home=writable_home())
    translator = Translator(wants_structured=request.output_schema is not None)
    out.emit(RunEvent(kind="progress", text=f"claude: starting the {request.role} turn"))
    try:
        stream = cast(AsyncGenerator[object, None], query(prompt=request.prompt, options=options))
        async with contextlib.aclosing(stream) as messages:
            async for message in messages:
                for event in translator.translate(message):
                    out.emit(event)
                if out.terminal is not None:
                    # One result ends the turn. Claude Code would otherwise stay up while a
                    # `run_in_background` job runs (to start a new turn when it finishes);
                    # closing the query stops the CLI, and run_main kills the job.
                    break
    except ClaudeSDKError as exc:
        # The CLI exits 1 after an error result (turn cap, API error) and the SDK raises for it;
        # the result already said why, so that exit is not a second failure.
        if out.terminal is None:
            out.emit(error(AGENT, f"Claude Code failed: {type(exc).__name__}: {exc}"))
        else:
            print(f"runner: the CLI failed after its result: {exc}", file=sys.stderr)


def main() -> int:
    return run_main(run_turn)


if __name__ == "__main__":
    sys.exit(main())
