"""`tribunal chat` as a user runs it: the installed script in its own process, stdin piped.

These go through the real wiring (settings → store → engine → LocalBackend); the one with the
Claude Code binary talks to the fake Messages API on 127.0.0.1, nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fakes.messages_api import FakeMessagesAPI, system_contains, text
from tests.fakes.turn_objects import owner_says, reviewer_says

TRIBUNAL = Path(sys.executable).parent / "tribunal"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIBUNAL_")}
    env.update(TRIBUNAL_DATA=str(tmp_path / "data"), TRIBUNAL_CONSOLE__USER="alice", **extra)
    # This checkout's packages: the venv's script alone imports those of its editable install.
    env.setdefault("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    # These runs are about the console on the local backend, whatever engine this host has.
    env.setdefault("TRIBUNAL_BACKEND", "local")
    return env


def test_chat_without_a_task(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(TRIBUNAL), "chat"],
        input="/status\n/help\n",
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Tribunal console, you are alice; a new room. /help for commands."
    assert lines[1] == "no task yet: type one"
    assert lines[2:4] == ["commands:", "  /approve, /reject      answer the open escalation"]
    assert (tmp_path / "data" / "tribunal.db").is_file()  # the store was opened and migrated
    assert "Traceback" not in done.stderr


@contextmanager
def console_process(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """`tribunal chat` with its pipes open; killed at the end if it is still running."""
    proc = subprocess.Popen(
        [str(TRIBUNAL), "chat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_quit_ends_the_process_while_stdin_stays_open(tmp_path: Path) -> None:
    """A terminal user's /quit: the reader thread is still blocked on stdin, exit is clean."""
    with console_process(tmp_path) as proc:
        assert proc.stdin is not None
        proc.stdin.write("/quit\n")
        proc.stdin.flush()
        proc.wait(timeout=60)  # stdin is still open here: no EOF helps the process exit
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "Fatal Python error" not in err and "Traceback" not in err
    assert out.startswith("Tribunal console")


def test_serve_without_tokens_is_the_console(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(TRIBUNAL), "serve"],
        input="/status\n",
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Tribunal console")
    # The start banner only: the backend, and the model key this test does not give.
    said = done.stderr.splitlines()
    assert said[0].startswith("tribunal: backend local: "), done.stderr
    assert all(s.startswith("tribunal: no model credential for ") for s in said[1:]), said


def test_serve_with_a_slack_token_slack_refuses_says_so_and_exits(tmp_path: Path) -> None:
    """The Slack adapter is there now: serve checks the token with auth.test first, and a Web
    API it cannot reach (a closed port on loopback here) is a clear error, not a silent bot."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # nobody listens there once the socket is closed
    done = subprocess.run(
        [str(TRIBUNAL), "serve"],
        input="/status\n",
        capture_output=True,
        text=True,
        env=_env(
            tmp_path,
            SLACK_BOT_TOKEN="xoxb-not-real",
            SLACK_APP_TOKEN="xapp-not-real",
            SLACK_API_URL=f"http://127.0.0.1:{closed}/api/",
        ),
        timeout=60,
    )
    assert done.returncode == 78, done.stderr
    assert f"slack: the Web API at http://127.0.0.1:{closed}/api/" in done.stderr
    assert "auth.test" in done.stderr
    assert "xoxb-not-real" not in done.stderr + done.stdout
    assert "xapp-not-real" not in done.stderr + done.stdout
    assert not done.stdout.startswith("Tribunal console")  # Slack was asked for, not the console


@pytest.mark.claude
def test_a_task_through_claude_code_and_the_local_backend(tmp_path: Path) -> None:
    """Owner → reviewer → wrap-up with the real Claude Code binary: the key and base URL of
    the settings reach each run (the fake sees the key), and the turns land in the console."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeMessagesAPI(default=text("DONE\nnothing left to do")) as fake:
        fake.script(system_contains("You are the owner"), [owner_says("DONE\nadded the README")])
        fake.script(
            system_contains("You are the reviewer"), [reviewer_says("APPROVED\nreads well")]
        )
        env = _env(
            tmp_path,
            ANTHROPIC_BASE_URL=fake.url,
            ANTHROPIC_API_KEY="sk-ant-console-test",
            TRIBUNAL_CONSOLE__WORKSPACE=str(workspace),
            SLACK_BOT_TOKEN="xoxb-must-not-leak",
        )
        started = time.monotonic()
        done = subprocess.run(
            [str(TRIBUNAL), "chat"],
            input="add a README\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
        )
        elapsed = time.monotonic() - started
        assert done.returncode == 0, done.stderr
        out = done.stdout
        for part in ("[owner] DONE", "added the README", "[reviewer] APPROVED", "done and closed"):
            assert part in out, out
        assert out.index("[owner] DONE") < out.index("[reviewer] APPROVED")
        calls = fake.calls
        assert calls, "Claude Code never reached the fake"
        assert {c.headers.get("x-api-key") for c in calls} == {"sk-ant-console-test"}
        assert all("xoxb-must-not-leak" not in str(c.body) for c in calls)
        print(f"three Claude Code turns through `tribunal chat`: {elapsed:.1f} s")


def test_sigterm_stops_the_console_cleanly(tmp_path: Path) -> None:
    with console_process(tmp_path) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("Tribunal console")  # up and reading stdin
        proc.terminate()
        proc.wait(timeout=60)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
