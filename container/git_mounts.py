"""The git metadata of a task's worktree, mounted read-only so git works inside its containers.

A task's worktree (rooms/work/worktrees.py) has a `.git` *file* naming its git dir on the host,
`<common>/worktrees/<name>`, whose `commondir` leads to the repository's common git dir
`<common>` (objects, refs, config). Neither is inside the workspace, so without them `git status`
in the container says "not a git repository". Both are mounted read-only at their own host paths
(the `.git` file names them by those paths), for every role: git's read commands work, and
nothing in the container can write a hook, a config, a ref, an object or the index (`git commit`
fails on the read-only file system; the engine commits, rooms/work/worktrees.py).

The paths come from the engine's RunSpec (found from the repository's side), never from the
`.git` file in the workspace, which the owner can rewrite to name any host folder.

The other worktrees' git dirs (`<common>/worktrees/*`: their HEAD, index and logs, i.e. the other
tasks' file names and state) are hidden under an empty read-only tmpfs, with only this task's own
git dir mounted back on it. What stays visible is the repository itself: its history and every
branch, including the branches the engine committed for other tasks once approved; another task's
worktree (its files) is never mounted. Podman copies a directory's content into a tmpfs mounted on
it unless told `notmpcopyup`; Docker has no such copy and no such option.

Git refuses a repository whose folders belong to another user ("dubious ownership": the common
dir is the checkout owner's, the container runs as uid 1000), so the container's environment
marks /workspace as safe, through GIT_CONFIG_* (command-line scope, which git honours for
`safe.directory`); the metadata being read-only, a repository that is not ours cannot be used to
plant anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

WORKSPACE = "/workspace"  # where the task's workspace is mounted in every container
SAFE_WORKSPACE_ENV = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": WORKSPACE,
}


class GitMountError(ValueError):
    """The git metadata named for a turn cannot be mounted; the reason says why."""


@dataclass(frozen=True)
class GitMounts:
    volumes: dict[str, dict[str, str]]  # docker-py `volumes=`: host path → bind, mode
    tmpfs: dict[str, str]  # docker-py `tmpfs=`: container path → options


def git_mounts(git_dir: str | None, common_dir: str | None, *, podman: bool) -> GitMounts:
    """The read-only mounts for a worktree whose git dir is `git_dir` in the repository whose
    common git dir is `common_dir`; none when neither is given (a workspace used in place)."""
    if git_dir is None and common_dir is None:
        return GitMounts({}, {})
    if git_dir is None or common_dir is None:
        raise GitMountError("a worktree's git dir and its repository's git dir go together")
    for path in (git_dir, common_dir):
        if not os.path.isabs(path) or not os.path.isdir(path):
            raise GitMountError(f"not a folder on this host: {path!r}")
    git_dir, common_dir = os.path.realpath(git_dir), os.path.realpath(common_dir)
    ro = "ro"
    volumes = {common_dir: {"bind": common_dir, "mode": ro}}
    tmpfs: dict[str, str] = {}
    others = os.path.join(common_dir, "worktrees")
    if os.path.dirname(git_dir) == others:
        copy = ",notmpcopyup" if podman else ""
        tmpfs[others] = f"ro{copy},size=64k,mode=755"
    if git_dir != common_dir:
        volumes[git_dir] = {"bind": git_dir, "mode": ro}
    return GitMounts(volumes, tmpfs)
