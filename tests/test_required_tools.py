"""Under TRIBUNAL_REQUIRE_ENGINE=1 a test whose tool is missing fails instead of skipping, for
every way a test says what it needs (tests/fakes/required.py): the Claude and Codex marks, and
`unavailable` inside a test (busybox, Podman, the image, Debian's Python)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
from tests.fakes.required import needs, unavailable

@needs(False, "no frobnicator")
def test_marked():
    pass

def test_inside():
    unavailable("no widget")

@needs(True, "present")
def test_present():
    pass
"""


@pytest.mark.parametrize(
    ("required", "outcome"), [("1", "1 failed, 1 passed, 1 error"), ("0", "1 passed, 2 skipped")]
)
def test_missing_tools_fail_when_required(tmp_path: Path, required: str, outcome: str) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {**os.environ, "TRIBUNAL_REQUIRE_ENGINE": required, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--rootdir", str(tmp_path), str(tmp_path / "test_probe.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert outcome in done.stdout, done.stdout + done.stderr
    if required == "1":
        assert "no frobnicator (TRIBUNAL_REQUIRE_ENGINE=1: required, not skipped)" in done.stdout
        assert "no widget (TRIBUNAL_REQUIRE_ENGINE=1" in done.stdout
