"""`python -m runners claude`: one agent turn through Claude Code (its stream-json mode).

Reads one `RunRequest` line on stdin, starts the CLI, writes `RunEvent` lines as its messages
arrive (see `runners.claude_events`), exits 0 after a `final`, 1 after an `error`.

The CLI is driven directly, as the Claude Agent SDK drives it (`--output-format stream-json
--input-format stream-json`, an `initialize` control request, then the prompt as one user
message, stdin closed), but without importing the SDK: loading it (and the MCP layer it
imports) cost every turn ~0.5 s, more than the CLI's own start. What the SDK gave this runner
and still holds: the same command line for the same request, the structured output (the
`result` message's `structured_output`), and no permission callback or hooks (none are used:
see `permission_mode` below), so nothing has to answer the CLI while it works.

How the CLI is configured, and why:

- `--setting-sources=` (none) and `--strict-mcp-config`: the workspace is untrusted; its
  `.claude/settings.json` could define hooks and its `.mcp.json` could start servers.
- the user message is sent `client_composed` (the SDK's `verbatim_prompts`): the prompt is
  assembled from chat messages and other agents' output, so an `@/path` inside it must stay
  text, not make Claude Code attach a local file (needs Claude Code 2.1.248 or later).
- `--permission-mode bypassPermissions` with `IS_SANDBOX=1`: in `-p` mode nobody can answer a
  permission prompt. `acceptEdits` lets Edit/Write run but denies Bash ("This command can't be
  checked before it runs"), and bypassPermissions alone is refused as root
  ("--dangerously-skip-permissions cannot be used with root/sudo privileges"); with IS_SANDBOX=1
  both Bash and Edit run, as root or not (checked with Claude Code 2.1.332). The isolation is
  the container's job, not the CLI's.
- `read_only=True` (reviewer, arbiter): the file-writing tools are removed from the model's
  context (`READ_ONLY_DISALLOWED`). Bash stays, because a reviewer must run the tests. In a
  container the workspace is mounted read-only, so Bash cannot write either; with the local
  backend there is no such mount and a read-only agent's Bash *can* write to the workspace.
- `output_schema` → `--json-schema`: Claude Code offers the model a `StructuredOutput` tool
  with that schema and puts the tool's input in the result's `structured_output` (see
  tests/fakes/messages_api.py).
- A role's system prompt is appended to Claude Code's own (`--append-system-prompt`: tool use,
  environment); a request without one gets `--system-prompt ""`, as the SDK gave it.
- Environment: no telemetry, no auto-update, no nonessential traffic, and a writable HOME
  (Claude Code keeps its config and session transcripts there; `resume` needs the same HOME and
  cwd as the turn that created the session). An unwritable HOME is replaced by a temp dir, which
  makes the turn work but loses its session for resuming.

The CLI is the one bundled in the claude-agent-sdk wheel (found on disk, the package is not
run), or TRIBUNAL_CLAUDE_CLI, or `claude` on PATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping

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
# What the CLI is told its caller is: the Python SDK's name, under which every behaviour this
# runner relies on was checked (integrations notes).
ENTRYPOINT = "sdk-py"

# Messages from the CLI can be large (a tool result with a whole file).
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
# After its result the CLI writes its session transcript and exits; it is given this long
# before SIGTERM (and as long again before SIGKILL). One that stays up is waiting for a
# `run_in_background` job to finish, to start a new turn: the turn is over, it is stopped.
EXIT_GRACE_S = 5.0
STDERR_TAIL_LINES = 5


def writable_home(environ: Mapping[str, str] | None = None) -> str:
    """HOME if it is a writable directory, else a fresh temp dir (sessions will not persist)."""
    home = (environ if environ is not None else os.environ).get("HOME", "")
    if home and os.path.isdir(home) and os.access(home, os.W_OK | os.X_OK):
        return home
    fallback = tempfile.mkdtemp(prefix="tribunal-claude-home-")
    print(f"runner: HOME {home!r} is not writable; using {fallback}", file=sys.stderr)
    return fallback


def working_dir(request: RunRequest) -> str:
    """request.cwd when it exists (in a container: /workspace), else where the runner started."""
    return request.cwd if os.path.isdir(request.cwd) else os.getcwd()


def find_cli(environ: Mapping[str, str] | None = None) -> str | None:
    """TRIBUNAL_CLAUDE_CLI, else the binary in the claude-agent-sdk wheel, else `claude` on
    PATH. The wheel is found with find_spec, which runs none of its code."""
    env = os.environ if environ is None else environ
    if env.get("TRIBUNAL_CLAUDE_CLI"):
        return env["TRIBUNAL_CLAUDE_CLI"]
    spec = importlib.util.find_spec("claude_agent_sdk")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(folder, "_bundled", "claude")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("claude", path=env.get("PATH"))


def command(request: RunRequest, cli: str) -> list[str]:
    """The CLI's command line for this request."""
    argv = [cli, "--output-format", "stream-json", "--verbose"]
    if request.system_prompt:
        argv += ["--append-system-prompt", request.system_prompt]
    else:
        argv += ["--system-prompt", ""]
    argv += ["--max-turns", str(request.max_turns)]
    if request.max_budget_usd is not None:
        argv += ["--max-budget-usd", str(request.max_budget_usd)]
    if request.read_only:
        argv += ["--disallowedTools", ",".join(READ_ONLY_DISALLOWED)]
    if request.model:
        argv += ["--model", request.model]
    argv += ["--permission-mode", "bypassPermissions"]
    if request.resume_session_id:
        # One token with `=`: a session id that starts with a dash stays the flag's value.
        argv.append(f"--resume={request.resume_session_id}")
    argv += ["--strict-mcp-config", "--setting-sources="]
    if request.output_schema is not None:
        argv += ["--json-schema", json.dumps(request.output_schema)]
    argv += ["--input-format", "stream-json"]
    return argv


def environment(home: str, cwd: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in (os.environ if base is None else base).items() if k != "CLAUDECODE"}
    return {**env, "CLAUDE_CODE_ENTRYPOINT": ENTRYPOINT, **QUIET_ENV, "HOME": home, "PWD": cwd}


def input_lines(request: RunRequest) -> bytes:
    """What the CLI reads on stdin: the `initialize` control request, then the prompt."""
    initialize = {
        "type": "control_request",
        "request_id": "req_1_tribunal",
        "request": {"subtype": "initialize", "hooks": None},
    }
    prompt = {
        "type": "user",
        "session_id": "",
        "message": {"role": "user", "content": request.prompt},
        "parent_tool_use_id": None,
        "client_composed": True,
    }
    return (json.dumps(initialize) + "\n" + json.dumps(prompt) + "\n").encode()


async def _forward_stderr(stream: asyncio.StreamReader, tail: list[str]) -> None:
    with contextlib.suppress(ValueError, ConnectionError):
        async for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                print(f"claude: {line}", file=sys.stderr)
                tail.append(line)
                del tail[:-STDERR_TAIL_LINES]


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Let the CLI exit by itself (it writes its session first), else stop it."""
    for stop in (None, process.terminate, process.kill):
        if stop is not None:
            with contextlib.suppress(ProcessLookupError):
                stop()
        try:
            await asyncio.wait_for(process.wait(), EXIT_GRACE_S)
            return
        except TimeoutError:
            continue


async def run_turn(request: RunRequest, out: EventWriter) -> None:
    cli = find_cli()
    if cli is None:
        where = "claude-agent-sdk's bundled binary, TRIBUNAL_CLAUDE_CLI or `claude` on PATH"
        out.emit(error(AGENT, f"Claude Code failed: no CLI found ({where})"))
        return
    cwd = working_dir(request)
    translator = Translator(wants_structured=request.output_schema is not None)
    out.emit(RunEvent(kind="progress", text=f"claude: starting the {request.role} turn"))
    try:
        process = await asyncio.create_subprocess_exec(
            *command(request, cli),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=environment(writable_home(), cwd),
            limit=MAX_MESSAGE_BYTES,
        )
    except OSError as exc:
        out.emit(error(AGENT, f"Claude Code failed: cannot start {cli}: {exc}"))
        return
    assert process.stdin and process.stdout and process.stderr
    stderr_tail: list[str] = []
    stderr = asyncio.create_task(_forward_stderr(process.stderr, stderr_tail))
    try:
        with contextlib.suppress(ConnectionError):
            process.stdin.write(input_lines(request))
            await process.stdin.drain()
        process.stdin.close()  # no callback to answer: the CLI is told all at once
        await _read_messages(process.stdout, translator, out)
    finally:
        await _stop(process)
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(stderr, EXIT_GRACE_S)
    if out.terminal is None:
        why = "; ".join(stderr_tail) or "nothing on stderr"
        status = process.returncode
        out.emit(error(AGENT, f"Claude Code failed: exit status {status} before a result: {why}"))


async def _read_messages(
    stdout: asyncio.StreamReader, translator: Translator, out: EventWriter
) -> None:
    while True:
        try:
            line = await stdout.readline()
        except ValueError:  # a line past MAX_MESSAGE_BYTES
            out.emit(error(AGENT, f"Claude Code wrote a message over {MAX_MESSAGE_BYTES} bytes"))
            return
        if not line:
            return
        line = line.strip()
        if not line.startswith(b"{"):
            continue  # not a message (some builds print debug lines on stdout)
        try:
            message = json.loads(line)
        except ValueError:
            print(f"runner: unreadable line from Claude Code: {line[:200]!r}", file=sys.stderr)
            continue
        if not isinstance(message, dict):
            continue
        for event in translator.translate(message):
            out.emit(event)
        if out.terminal is not None:
            # One result ends the turn; _stop lets the CLI finish writing its session.
            return


def main() -> int:
    return run_main(run_turn)


if __name__ == "__main__":
    sys.exit(main())
