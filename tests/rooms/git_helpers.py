"""Real git repositories for the worktree tests (plain git, run as a user would)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.invalid",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.invalid",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=ENV, capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A checkout with one commit of `files` (default: README.md)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for rel, text in (files or {"README.md": "hello\n"}).items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return path
