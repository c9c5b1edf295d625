"""The engine's own `command` runs for real: the LocalBackend starting `python -P -m runners
command` of this checkout (PYTHONPATH, so a worktree runs its own runner, not an installed one)."""

from __future__ import annotations

from pathlib import Path

from container.local import LocalBackend

REPO = Path(__file__).resolve().parents[2]


def command_backend() -> LocalBackend:
    return LocalBackend(env={"PYTHONPATH": str(REPO)}, kill_grace_s=1.0)
