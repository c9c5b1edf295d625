"""tests/run, the suite's own script: every slow step says what it does before it starts (a fresh
machine spends minutes in apt, pip and the image builds), and the README names what it checks."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (ROOT / "tests" / "run").read_text()
STEPS = (
    "apt-get update",
    "bot/run",
    "install_codex.sh",
    "container.image fetch",
    "tests.fakes.podman prepare",
    "ruff check .",
    "ruff format --check .",
    "mypy ",
    "python -m pytest",
)


def test_every_step_is_announced_before_it_runs() -> None:
    lines = [line.strip() for line in SCRIPT.splitlines()]
    for step in STEPS:
        at = next(i for i, line in enumerate(lines) if step in line and not line.startswith("#"))
        before = [line for line in lines[max(0, at - 3) : at] if line.startswith("say ")]
        assert before, f"no announcement before {step!r}"


def test_the_readme_names_the_mypy_targets_the_script_checks() -> None:
    [targets] = re.findall(r"^mypy (.+)$", SCRIPT, flags=re.MULTILINE)
    readme = (ROOT / "README.md").read_text()
    assert f"`mypy {targets}`" in readme
    assert "`doctor` exits 0 when" in readme


def test_every_run_lists_its_slowest_tests() -> None:
    # A CI log then says where the suite's time goes without a second, instrumented run.
    [call] = [line for line in SCRIPT.splitlines() if line.startswith("python -m pytest")]
    assert re.search(r"--durations=\d+", call)
