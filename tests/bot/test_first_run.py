"""A first run as a new user meets it (issue 27, "First run"), through `tribunal chat` and
`tribunal serve` in their own processes: this checkout's code (PYTHONPATH), the local backend,
no model key in the environment.

- #1 no model key: the start banner names the agent type and the variable; the first task's
  owner turn fails at once with that one line and the task waits for a person (no retry, no
  "invalid run token", no "Not logged in").
- #6 the local backend says in one line that the turns run unisolated; `/help` is a list.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TRIBUNAL = Path(sys.executable).parent / "tribunal"
REPO = Path(__file__).resolve().parents[2]
MODEL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")
NO_KEY = (
    "tribunal: no model credential for claude (groups: console): its turns fail until you set "
    "ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL) in the environment, .env or tribunal.toml, and "
    "restart"
)
LOCAL = (
    "tribunal: backend local: the turns run as plain processes on this machine, unisolated "
    "(TRIBUNAL_BACKEND=local)"
)


def first_run_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TRIBUNAL_") and k not in MODEL_VARIABLES
    }
    env.update(
        PYTHONPATH=str(REPO),  # the venv's script would import the main checkout's packages
        TRIBUNAL_DATA=str(tmp_path / "data"),
        TRIBUNAL_CONSOLE__USER="alice",
        TRIBUNAL_BACKEND="local",
        **extra,
    )
    return env


def chat(tmp_path: Path, lines: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TRIBUNAL), "chat"],
        input=lines,
        capture_output=True,
        text=True,
        env=first_run_env(tmp_path, **extra),
        cwd=tmp_path,
        timeout=120,
    )


def test_without_a_model_key_the_banner_says_so_and_the_task_waits_at_once(
    tmp_path: Path,
) -> None:
    done = chat(tmp_path, "add a README\n/status\n")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [LOCAL, NO_KEY]
    failed = (
        "[tribunal] ⚠️ The owner turn 1 failed (setup): no model credential for claude: set "
        "ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL), then retry."
    )
    lines = done.stdout.splitlines()
    assert failed in lines, done.stdout
    assert lines.count(failed) == 1 and "Retrying once" not in done.stdout  # no second try
    assert "the owner's run cannot start until the bot's set-up is fixed" in done.stdout
    assert "Task #1: waiting for a person" in done.stdout
    for noise in ("invalid run token", "Not logged in", "Traceback"):
        assert noise not in done.stdout + done.stderr


def test_with_a_model_key_the_banner_names_no_credential(tmp_path: Path) -> None:
    done = chat(tmp_path, "/status\n", ANTHROPIC_API_KEY="sk-ant-first-run")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [LOCAL]


def test_image_build_without_any_engine_says_what_to_do_in_one_line(tmp_path: Path) -> None:
    """#3: no engine and no podman: one line, not the docker SDK's "Error while fetching server
    API version … FileNotFoundError"."""
    nowhere = f"unix://{tmp_path}/no-engine.sock"
    env = first_run_env(tmp_path, DOCKER_HOST=nowhere, PATH=str(Path(sys.executable).parent))
    del env["TRIBUNAL_BACKEND"]
    done = subprocess.run(
        [str(TRIBUNAL), "image", "build"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"tribunal image: no engine answers at {nowhere}: start Docker or Podman and point "
        "DOCKER_HOST at it, or install podman (`apt-get install podman runc`, as `bot/run` does "
        "as root) so the bot builds on its own"
    ]
