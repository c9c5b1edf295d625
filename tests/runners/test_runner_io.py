"""runners/_io.py, runners/_procs.py and `python -m runners`, each run as a real process.

run_main() makes its process a child subreaper, replaces the SIGTERM handler and kills its
descendants on the way out, so it is never called inside the pytest process: each test runs a
small runner program in a subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from runners.protocol import CRASHED, PROTOCOL, RunEvent, RunRequest, decode_event, encode

pytestmark = pytest.mark.timeout(60)
REPO = Path(__file__).resolve().parents[2]
REQUEST = encode(RunRequest(role="owner", prompt="hi")).encode()


def run_program(body: str, stdin: bytes = REQUEST) -> tuple[int, list[RunEvent], str]:
    """Run `body` (which defines `async def turn(request, out)`) under run_main."""
    program = "import sys\nfrom runners._io import run_main\n" + textwrap.dedent(body)
    program += "\nsys.exit(run_main(turn))\n"
    proc = subprocess.run(
        [sys.executable, "-c", program], input=stdin, capture_output=True, cwd=REPO, timeout=30
    )
    events = [decode_event(line) for line in proc.stdout.splitlines()]
    return proc.returncode, events, proc.stderr.decode()


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def test_a_final_exits_0() -> None:
    rc, events, _ = run_program(
        """
        from runners.protocol import RunEvent
        async def turn(request, out):
            out.emit(RunEvent(kind="progress", text="for " + request.role))
            out.emit(RunEvent(kind="final", text="DONE"))
        """
    )
    assert rc == 0
    assert [(e.kind, e.text) for e in events] == [("progress", "for owner"), ("final", "DONE")]


def test_an_exception_becomes_an_error_event_not_only_a_traceback() -> None:
    rc, events, stderr = run_program(
        """
        async def turn(request, out):
            raise ValueError("the SDK broke")
        """
    )
    assert rc == 1
    assert [(e.kind, e.code) for e in events] == [("error", CRASHED)]
    assert "ValueError: the SDK broke" in events[0].text
    assert "Traceback" in stderr  # the details stay in the diagnostics


def test_no_answer_is_reported() -> None:
    rc, events, _ = run_program("async def turn(request, out):\n    pass\n")
    assert rc == 1
    assert events[-1].code == CRASHED and "without a final answer" in events[-1].text


def test_only_the_first_terminal_event_counts() -> None:
    rc, events, stderr = run_program(
        """
        from runners.protocol import RunEvent, error
        async def turn(request, out):
            out.emit(RunEvent(kind="final", text="first"))
            out.emit(error("agent", "second"))
            out.emit(RunEvent(kind="final", text="third"))
        """
    )
    assert rc == 0
    assert [e.text for e in events] == ["first"]
    assert "dropped event after final" in stderr


@pytest.mark.parametrize(
    ("stdin", "reason"),
    [(b"", "stdin was empty"), (b"{not json\n", "not JSON"), (b'{"role": 1}\n', "RunRequest")],
)
def test_a_bad_request_is_answered_with_a_protocol_error(stdin: bytes, reason: str) -> None:
    rc, events, _ = run_program("async def turn(request, out):\n    raise AssertionError\n", stdin)
    assert rc == 2
    assert [e.code for e in events] == [PROTOCOL]
    assert reason in events[0].text


def test_stray_output_goes_to_stderr_not_into_the_protocol() -> None:
    rc, events, stderr = run_program(
        """
        import subprocess
        from runners.protocol import RunEvent
        async def turn(request, out):
            print("a stray print")
            subprocess.run(["echo", "a child's output"], check=True)
            out.emit(RunEvent(kind="final", text="DONE"))
        """
    )
    assert rc == 0 and [e.kind for e in events] == ["final"]
    assert "a stray print" in stderr and "a child's output" in stderr


ESCAPE = """
import os, subprocess
from runners.protocol import RunEvent
async def turn(request, out):
    # like Claude Code's Bash tool: a new session, and `cmd &` re-parented once the shell exits
    subprocess.run(
        ["sh", "-c", "sleep 300 & echo $! > {pidfile}"], start_new_session=True, check=True
    )
    {rest}
"""


def test_background_processes_that_left_the_group_die_with_the_turn(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    rest = 'out.emit(RunEvent(kind="final", text="DONE"))'
    rc, events, _ = run_program(ESCAPE.format(pidfile=pidfile, rest=rest))
    assert rc == 0 and events[-1].kind == "final"
    assert wait_gone(int(pidfile.read_text()))


def test_sigterm_kills_the_escaped_background_processes_too(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    rest = "import asyncio\n    await asyncio.sleep(300)"
    program = "import sys\nfrom runners._io import run_main\n" + textwrap.dedent(
        ESCAPE.format(pidfile=pidfile, rest=rest)
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", program + "\nsys.exit(run_main(turn))\n"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(REQUEST)
        proc.stdin.close()
        deadline = time.monotonic() + 10
        while not (pidfile.exists() and pidfile.read_text().strip()):
            assert time.monotonic() < deadline, "the runner never started its background job"
            time.sleep(0.05)
        escaped = int(pidfile.read_text())
        assert os.getpgid(escaped) != proc.pid  # out of reach of a process-group kill
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=10) == 128 + signal.SIGTERM
        assert wait_gone(escaped)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("args", [["bogus"], [], ["claude", "extra"]])
def test_dispatch_rejects_unknown_agents(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "runners", *args],
        input=REQUEST,
        capture_output=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # -P: this checkout, not an installed one
        timeout=30,
    )
    assert proc.returncode == 2
    (line,) = proc.stdout.splitlines()
    event = decode_event(line)
    assert event.code == PROTOCOL
    assert "usage: python -m runners {claude|codex|command} or --warm" in event.text
    assert json.loads(line)["kind"] == "error"
