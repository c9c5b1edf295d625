"""Nothing an agent writes runs on the host: the engine's git calls obey no hook, fsmonitor or
configuration planted in a task's worktree, nor hooks and fsmonitor in the group's repository
(DESIGN §6). Each plant is first shown to be live: a plain `git commit` runs it."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

from rooms.base.model import GroupPolicy
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Script, say
from tests.rooms.git_helpers import ENV, git, make_repo

HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout")


def plant(git_dir: Path, markers: Path, tag: str) -> None:
    """Hooks, a hooks path and an fsmonitor that each leave a marker file when git runs them."""
    hooks = git_dir / "planted-hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        for folder in (hooks, git_dir / "hooks"):
            folder.mkdir(exist_ok=True)
            script = folder / name
            script.write_text(f"#!/bin/sh\ntouch {markers}/{tag}-{name}\n")
            script.chmod(0o755)
    monitor = git_dir / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {markers}/{tag}-fsmonitor\nexit 1\n")
    monitor.chmod(0o755)
    with (git_dir / "config").open("a") as f:
        f.write(
            f"[core]\n\thooksPath = {hooks}\n\tfsmonitor = {monitor}\n"
            f'[alias]\n\tcommit = "!touch {markers}/{tag}-alias"\n'
            f'[filter "evil"]\n\tclean = "sh -c \'touch {markers}/{tag}-filter; cat\'"\n'
        )


def test_the_plants_are_live_for_a_plain_git(tmp_path: Path) -> None:
    """The control: the same plant in an ordinary checkout runs under a plain `git commit`."""
    repo = make_repo(tmp_path / "repo")
    markers = tmp_path / "markers"
    markers.mkdir()
    plant(repo / ".git", markers, "repo")
    (repo / ".gitattributes").write_text("* filter=evil\n")
    (repo / "x.py").write_text("x = 1\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], env=ENV, check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "x"], env=ENV, check=True)
    fired = {p.name for p in markers.iterdir()}
    assert {"repo-fsmonitor", "repo-filter", "repo-pre-commit", "repo-post-commit"} <= fired


async def test_the_engines_commit_runs_nothing_planted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    markers = tmp_path / "markers"
    markers.mkdir()
    planted = asyncio.Event()
    script: Script = {
        "owner": [say("DONE\nedited", files={"a.py": "a = 1\n"}, gate=planted), "DONE\nwrapped"],
        "reviewer": ["APPROVED"],
    }
    policy = GroupPolicy(name="g", workspace=str(repo), approvers=frozenset({"boss"}))
    async with engine_kit(tmp_path, script, policy=policy) as kit:
        await kit.say("@tribunal add a")
        await kit.runner.wait_calls(1)
        worktree = Path(kit.runner.calls[0].spec.workspace or "")
        # The owner replaces its worktree's `.git` pointer with a git folder of its own, and
        # asks for a filter on every file; the group's repository gets hooks and an fsmonitor
        # too (the user's own, or written by a local agent).
        (worktree / ".git").unlink()
        shutil.copytree(repo / ".git", worktree / ".git")
        plant(worktree / ".git", markers, "worktree")
        (worktree / ".gitattributes").write_text("* filter=evil\n")
        plant(repo / ".git", markers, "repo")
        planted.set()
        await kit.settle()
        assert (await kit.task()).status == "closed"
        closing = kit.platform.texts()[-1]
    assert sorted(p.name for p in markers.iterdir()) == []
    assert "committed on branch `tribunal/1-add-a`" in closing
    # The commit holds the work and the attributes file, never the planted git folder.
    names = git(
        repo, "-c", "core.fsmonitor=false", "ls-tree", "-r", "--name-only", "tribunal/1-add-a"
    )
    assert names.split() == [".gitattributes", "README.md", "a.py"]
