"""`python -P -m runners --warm` (runners/warm.py) as a real process: the spare runner's side of
the hand-over. A spare dismissed before a turn says nothing; a bad setup line is a protocol
error; a good one is acknowledged with one blank line, and the turn then runs with the setup's
environment and folder, not the ones the spare started with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runners.protocol import (
    CRASHED,
    PROTOCOL,
    Check,
    CheckReport,
    RunEvent,
    RunRequest,
    TurnSetup,
    decode_event,
    encode,
)

pytestmark = pytest.mark.timeout(60)
REPO = Path(__file__).resolve().parents[2]


def spare(stdin: bytes, **env: str) -> tuple[int, bytes]:
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "runners", "--warm"],
        input=stdin,
        capture_output=True,
        cwd="/",
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), **env},
        timeout=30,
    )
    return proc.returncode, proc.stdout


def events(stdout: bytes) -> list[RunEvent]:
    return [decode_event(line) for line in stdout.splitlines() if line.strip()]


def test_a_dismissed_spare_exits_quietly() -> None:
    assert spare(b"") == (0, b"")


@pytest.mark.parametrize(
    "line", [b"not json\n", b'{"agent": "bogus", "cwd": "/"}\n', b'{"agent": "claude"}\n']
)
def test_a_bad_setup_is_a_protocol_error(line: bytes) -> None:
    status, out = spare(line)
    assert status == 2
    (event,) = events(out)
    assert event.code == PROTOCOL and "bad turn setup" in event.text


def test_a_folder_that_is_gone_fails_the_turn_after_the_ack(tmp_path: Path) -> None:
    setup = TurnSetup(agent="command", cwd=str(tmp_path / "gone"), env={})
    status, out = spare(encode(setup).encode())
    assert out.startswith(b"\n")  # the setup was taken
    (event,) = events(out)
    assert status == 2 and event.code == CRASHED and "gone" in event.text


def test_the_turn_runs_with_the_setups_environment_and_folder(tmp_path: Path) -> None:
    check = Check(id="T1", command="echo $PATH; pwd", timeout_s=30)
    request = RunRequest(role="executor", prompt="", cwd=str(tmp_path), checks=[check])
    path = f"{tmp_path}:/usr/bin:/bin"
    setup = TurnSetup(agent="command", cwd=str(tmp_path), env={"PATH": path})
    status, out = spare(encode(setup).encode() + encode(request).encode(), PATH="/nowhere")
    assert status == 0
    assert out.startswith(b"\n")
    final = events(out)[-1]
    assert final.kind == "final" and final.structured is not None
    (result,) = CheckReport.model_validate(final.structured).checks
    assert result.output_tail.split() == [path, str(tmp_path)]
