"""The Codex runner: one agent turn through the Codex CLI (`codex exec --json`).

`python -m runners codex` reads one `RunRequest` line from stdin, runs `codex exec --json` (or
`codex exec resume <thread id>` to continue a conversation) and translates Codex's JSONL events
into `RunEvent` lines as they arrive. Checked with `@openai/codex` 0.171.0.

How the request becomes a Codex invocation, and why:

- The prompt goes to Codex's stdin (prompt argument `-`), so its size is not bounded by the
  kernel's per-argument limit, and nothing else is piped in (a piped stdin is otherwise appended
  to the prompt as a `<stdin>` block).
- The system prompt becomes `developer_instructions` (`-c`): Codex sends it as a developer message
  after its own base instructions, which keep their tool-use guidance. A system prompt too large
  for one argument is put in front of the prompt instead.
- Sandbox (TRIBUNAL_CODEX_SANDBOX): `codex` (the default) uses Codex's own sandbox,
  `sandbox_mode = "read-only"` for a read-only request and `"workspace-write"` otherwise (its
  commands also get a read-only `.git`, checked, and by Codex's account no network);
  `external` passes `--dangerously-bypass-approvals-and-sandbox` because something else
  isolates the turn: our runner container, which should set it (the container is the sandbox by
  design: reviewers get a read-only mount, all capabilities dropped). Why not Codex's sandbox
  there: on Linux it is bubblewrap, which needs a `bwrap` on PATH or `codex-resources/bwrap`
  beside the binary, and user namespaces, which an engine's seccomp profile may forbid. Without
  them every command fails ("bubblewrap is unavailable", exit 101) while the turn still ends as
  a success, having done nothing. Checked in Podman 4.3 (uid 1000, cap_drop ALL,
  no-new-privileges): with the bundled bwrap mounted Codex's sandbox worked, without it only
  `external` did. Not detected automatically: a development machine may itself be a container
  (/.dockerenv) that is not ours.
- Model provider: Codex 0.171 ignores `OPENAI_BASE_URL`. When `TRIBUNAL_CODEX_BASE_URL` or
  `OPENAI_BASE_URL` is set, the runner defines a custom provider with `-c` overrides
  (`model_providers.tribunal`: base_url, env_key, wire_api "responses", no websockets), which
  is the same thing as a `[model_providers.tribunal]` table in `$CODEX_HOME/config.toml` but never
  overwrites the user's own config file. The API key is read by Codex from the variable named
  by `env_key`: the first of TRIBUNAL_CODEX_API_KEY, OPENAI_API_KEY, CODEX_API_KEY that is set.
  Without a base URL, Codex's built-in OpenAI provider is used (CODEX_API_KEY, filled from
  OPENAI_API_KEY when only that is set).
- `CODEX_HOME` (sessions, needed to resume): the caller's, else `~/.codex` when it can be
  created, else a temporary folder (then a later resume will not find the thread). A resume
  whose thread is not there starts a new thread with the same prompt (a progress line says so).
- Web search: Codex 0.171 offers the model OpenAI's hosted `web_search` tool by default (with
  `external_web_access: true`), which would give an agent without network the web through the
  model API; the credential proxy refuses such a request. So the runner turns it off
  (`-c web_search="disabled"`), unless TRIBUNAL_SERVER_TOOLS=1 (set by the proxied runner for
  a group with `server_tools = true`).
- An unreachable model API: Codex retries forever ("Reconnecting... waiting for network"); the
  runner ends the turn with an error after TRIBUNAL_CODEX_UNREACHABLE_S seconds (default 120).

Not mapped: `max_turns` (Codex exec has no turn cap; the host's timeouts bound a turn) and
`max_budget_usd` (Codex reports tokens, not prices; `cost_usd` stays 0).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from runners._io import EventWriter, run_main
from runners.codex_events import THREAD_LOST, CodexEventMapper, TokenTotals
from runners.protocol import AGENT, RunEvent, RunRequest, error

# Codex prints lines as long as a command's whole output; asyncio's default limit is 64 KiB.
LINE_LIMIT = 32 * 1024 * 1024
# Linux refuses a single argument longer than 128 KiB (MAX_ARG_STRLEN); stay well below.
MAX_ARGUMENT_CHARS = 64 * 1024
# How long Codex may wait for an unreachable model API before the runner ends the turn
# (TRIBUNAL_CODEX_UNREACHABLE_S). Codex itself would wait forever.
UNREACHABLE_S = 120.0
PROVIDER = "tribunal"
KEY_VARIABLES = ("TRIBUNAL_CODEX_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY")
SERVER_TOOLS_VARIABLE = "TRIBUNAL_SERVER_TOOLS"


class SetupError(Exception):
    """Something about the request or environment that stops the turn before Codex starts."""


def codex_binary(env: Mapping[str, str]) -> str:
    explicit = env.get("CODEX_BIN")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise SetupError(f"CODEX_BIN={explicit} is not an executable file")
        return explicit
    found = shutil.which("codex", path=env.get("PATH"))
    if not found:
        raise SetupError("codex binary not found: install @openai/codex or set CODEX_BIN")
    return found


def codex_home(env: Mapping[str, str]) -> tuple[Path, bool]:
    """The folder Codex keeps its sessions in, and whether it is a throwaway temp folder."""
    configured = env.get("CODEX_HOME")
    candidates = [Path(configured)] if configured else []
    if not configured and env.get("HOME"):
        candidates.append(Path(env["HOME"]) / ".codex")
    for candidate in candidates:
        with contextlib.suppress(OSError):
            candidate.mkdir(parents=True, exist_ok=True)
            if os.access(candidate, os.W_OK | os.X_OK):
                return candidate, False
        if configured:
            raise SetupError(f"CODEX_HOME={configured} is not a writable folder")
    return Path(tempfile.mkdtemp(prefix="codex-home-")), True


def toml_string(text: str) -> str:
    """A TOML basic string. Escapes every control character: `-c` values are parsed as TOML."""
    out = ['"']
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def provider_overrides(env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """`-c` arguments that select the model provider, and variables to add to Codex's env."""
    base_url = env.get("TRIBUNAL_CODEX_BASE_URL") or env.get("OPENAI_BASE_URL")
    if not base_url:
        extra = {}
        if not env.get("CODEX_API_KEY") and env.get("OPENAI_API_KEY"):
            extra["CODEX_API_KEY"] = env["OPENAI_API_KEY"]
        return [], extra
    if not base_url.startswith(("http://", "https://")):
        raise SetupError(f"model API base URL must be http(s)://…, got {base_url!r}")
    key_variable = next((v for v in KEY_VARIABLES if env.get(v)), KEY_VARIABLES[1])
    table = (
        f"{{name={toml_string('Tribunal')}, base_url={toml_string(base_url)}, "
        f"env_key={toml_string(key_variable)}, wire_api={toml_string('responses')}, "
        "supports_websockets=false}"
    )
    return [
        "-c",
        f"model_provider={toml_string(PROVIDER)}",
        "-c",
        f"model_providers.{PROVIDER}={table}",
    ], {}


def sandbox_arguments(request: RunRequest, env: Mapping[str, str]) -> list[str]:
    mode = env.get("TRIBUNAL_CODEX_SANDBOX") or "codex"
    if mode == "external":
        return ["--dangerously-bypass-approvals-and-sandbox"]
    if mode != "codex":
        raise SetupError(f"TRIBUNAL_CODEX_SANDBOX must be 'codex' or 'external', got {mode!r}")
    policy = "read-only" if request.read_only else "workspace-write"
    # `-c` rather than `-s`: `codex exec resume` has no `-s` flag.
    return ["-c", f"sandbox_mode={toml_string(policy)}"]


def build_command(
    request: RunRequest, binary: str, env: Mapping[str, str], schema_file: Path | None
) -> tuple[list[str], str, dict[str, str]]:
    """The argv, the text for Codex's stdin, and the variables to add to its environment."""
    prompt = request.prompt
    options = ["--json", "--skip-git-repo-check", *sandbox_arguments(request, env)]
    if request.model:
        options += ["-m", request.model]
    provider, extra_env = provider_overrides(env)
    options += provider
    if env.get(SERVER_TOOLS_VARIABLE) != "1":
        options += ["-c", f"web_search={toml_string('disabled')}"]
    if request.system_prompt:
        if len(request.system_prompt) <= MAX_ARGUMENT_CHARS:
            options += ["-c", f"developer_instructions={toml_string(request.system_prompt)}"]
        else:
            prompt = f"{request.system_prompt}\n\n---\n\n{prompt}"
    if schema_file is not None:
        options += ["--output-schema", str(schema_file)]
    if request.resume_session_id:
        # `exec resume` takes no -C; the working folder is the process's (set by the caller).
        argv = [binary, "exec", "resume", *options, request.resume_session_id, "-"]
    else:
        argv = [binary, "exec", *options, "-C", request.cwd, "-"]
    return argv, prompt, extra_env


class UsageLedger:
    """Codex reports a thread's token totals since its start, also after a resume; we keep the
    totals per thread in CODEX_HOME so each turn reports only its own tokens."""

    def __init__(self, home: Path) -> None:
        self.folder = home / "tribunal-usage"

    def _file(self, thread_id: str) -> Path:
        safe = "".join(c for c in thread_id if c.isalnum() or c in "-_")
        return self.folder / f"{safe}.json"

    def totals(self, thread_id: str | None) -> TokenTotals:
        if not thread_id:
            return TokenTotals()
        try:
            data = json.loads(self._file(thread_id).read_text())
            return TokenTotals(int(data["input_tokens"]), int(data["output_tokens"]))
        except (OSError, ValueError, KeyError, TypeError):
            return TokenTotals()

    def save(self, thread_id: str, totals: TokenTotals) -> None:
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            data = {"input_tokens": totals.input_tokens, "output_tokens": totals.output_tokens}
            self._file(thread_id).write_text(json.dumps(data))


async def run_turn(request: RunRequest, writer: EventWriter) -> None:
    env = dict(os.environ)
    try:
        binary = codex_binary(env)
        if not Path(request.cwd).is_dir():
            raise SetupError(f"working folder {request.cwd} does not exist")
        home, throwaway = codex_home(env)
    except SetupError as exc:
        writer.emit(error(AGENT, str(exc)))
        return
    # Only a schema needs a file. A SIGTERM ends the runner without `finally` (runners/_procs.py),
    # so whatever is created here may stay behind in /tmp; keep it to what is needed.
    scratch = None
    if request.output_schema is not None:
        scratch = Path(tempfile.mkdtemp(prefix="tribunal-codex-"))
    try:
        lost = await _run_codex(request, writer, env, binary, home, scratch)
        if lost:
            # The thread is gone (a new container, a wiped CODEX_HOME): the prompt carries the
            # task's context (agents read each other through the store), so start a new thread
            # rather than fail the turn; the new `session` event tells the host its id.
            writer.emit(RunEvent(kind="progress", text=f"codex: {lost}; starting a new thread"))
            fresh = request.model_copy(update={"resume_session_id": None})
            await _run_codex(fresh, writer, env, binary, home, scratch)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        if throwaway:
            shutil.rmtree(home, ignore_errors=True)


async def _run_codex(
    request: RunRequest,
    writer: EventWriter,
    env: dict[str, str],
    binary: str,
    home: Path,
    scratch: Path | None,
) -> str:
    """Runs Codex and emits its events. Returns a reason, without emitting the error, when the
    thread to resume does not exist (the caller then starts a new one); else ''."""
    schema_file = None
    if scratch is not None:
        schema_file = scratch / "output-schema.json"
        schema_file.write_text(json.dumps(request.output_schema))
    try:
        argv, prompt, extra_env = build_command(request, binary, env, schema_file)
    except SetupError as exc:
        writer.emit(error(AGENT, str(exc)))
        return ""
    give_up_after = _unreachable_limit(env)
    ledger = UsageLedger(home)
    mapper = CodexEventMapper(
        want_structured=schema_file is not None,
        usage_before=ledger.totals(request.resume_session_id),
    )
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=request.cwd,
            env={**env, **extra_env, "CODEX_HOME": str(home)},
            limit=LINE_LIMIT,
        )
    except OSError as exc:  # not an executable for this machine, argument list too long, ...
        writer.emit(error(AGENT, f"cannot start codex ({binary}): {exc}"))
        return ""
    assert process.stdin and process.stdout and process.stderr
    stderr_tail = asyncio.create_task(_drain_stderr(process.stderr))
    feeding = asyncio.create_task(_feed_prompt(process.stdin, prompt))
    loop = asyncio.get_running_loop()
    try:
        while True:
            timeout = None
            if mapper.waiting_since is not None:
                timeout = max(0.0, mapper.waiting_since + give_up_after - loop.time())
            try:
                line = await asyncio.wait_for(process.stdout.readline(), timeout)
            except TimeoutError:
                for event in mapper.give_up(give_up_after):
                    writer.emit(event)
                return ""  # `finally` stops Codex
            if not line:
                break
            for event in mapper.feed(line, now=loop.time()):
                writer.emit(event)
            if mapper.thread_id and mapper.totals_after is not None:
                ledger.save(mapper.thread_id, mapper.totals_after)
                mapper.totals_after = None
        status = await process.wait()
        await feeding
        stderr = await stderr_tail
        if request.resume_session_id and mapper.thread_id is None and THREAD_LOST in stderr:
            return f"thread {request.resume_session_id} not found"
        for event in mapper.finish(status, stderr):
            writer.emit(event)
        return ""
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        feeding.cancel()
        stderr_tail.cancel()


def _unreachable_limit(env: Mapping[str, str]) -> float:
    raw = env.get("TRIBUNAL_CODEX_UNREACHABLE_S", "")
    try:
        return max(0.0, float(raw)) if raw else UNREACHABLE_S
    except ValueError:
        return UNREACHABLE_S


async def _feed_prompt(stdin: asyncio.StreamWriter, prompt: str) -> None:
    # Codex may exit before reading (bad flag, missing key): a broken pipe is not our failure.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(prompt.encode("utf-8"))
        await stdin.drain()
        stdin.close()
        await stdin.wait_closed()


async def _drain_stderr(stream: asyncio.StreamReader, keep: int = 4000) -> str:
    """Pass Codex's diagnostics on to our stderr and keep the end for error messages."""
    tail = b""
    while chunk := await stream.read(65536):
        sys.stderr.buffer.write(chunk)
        sys.stderr.buffer.flush()
        tail = (tail + chunk)[-keep:]
    return tail.decode("utf-8", "replace")


def main() -> int:
    return run_main(run_turn)


if __name__ == "__main__":
    sys.exit(main())
