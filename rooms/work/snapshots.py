"""A task worktree's content as the git tree the engine would commit (DESIGN §3, §6).

What is committed is exactly what was reviewed: when the reviewer approves, the engine takes
this snapshot and stores its tree id with the task (`Task.approved_tree`); after the owner's
wrap-up it takes it again, and only when both are the same tree does it commit, and then that
tree object itself (`git commit-tree`, rooms/work/worktrees.py), never a fresh `git add` of whatever
the worktree holds by then. Any difference sends the work back to review.

A snapshot is `git add --all` + `git write-tree` into an index of the engine's own (a temporary
`GIT_INDEX_FILE` started from the branch's commit), through rooms/work/gitsafe.py like every engine
git call: the worktree's git dir named explicitly, no hooks, no fsmonitor, no filters, no
configuration from the worktree. It respects the repository's own ignore rules (`.gitignore`,
`.git/info/exclude`) and leaves out a fixed set of tool caches, which are never committed:
`EXCLUDED` below (the same caches the workspace hash skips, rooms/work/workspace.py). An excluded
path the base commit tracks stays as that commit has it. Compiled Python (`*.pyc`, `*.pyo`)
is among them on purpose: a planted sourceless or unchecked-hash `.pyc` would run in a fresh
clone instead of the reviewed source.

Refused (`Refused`, with a message for the room) rather than committed:

- a nested git repository (git would record it as a gitlink, a pointer to commits that are not
  in the repository, whose content nobody reviewed);
- a file over the group's `commit_max_file_mb` that is new or changed since the task started
  (new untracked files are measured before git reads them, so a huge file is not copied into
  the object store first).
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass

from rooms.base.model import GroupPolicy, Task
from rooms.work import worktrees
from rooms.work.gitsafe import GitError, git, no_filters
from rooms.work.worktrees import Worktree

# Never committed: tool caches and compiled Python (see the module's docstring).
EXCLUDED = (
    "__pycache__/",
    "*.pyc",
    "*.pyo",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".hypothesis/",
)
GITLINK = "160000"
LISTED = 5  # refused paths named in the message; the rest are counted


class Refused(Exception):
    """The worktree holds something the engine will not commit; the text says what, for the
    room."""


@dataclass(frozen=True)
class _Entry:
    mode: str
    sha: str
    size: int | None  # None: not a blob (a gitlink or a tree)


def pathspecs() -> list[str]:
    """`.` minus `EXCLUDED`, as git pathspecs (`:(exclude,glob)`), at any depth."""
    specs = ["."]
    for pattern in EXCLUDED:
        glob = f"**/{pattern}**" if pattern.endswith("/") else f"**/{pattern}"
        specs.append(f":(exclude,glob){glob}")
    return specs


async def snapshot(tree: Worktree, max_file_bytes: int) -> str:
    """The tree id of the worktree's content as the engine would commit it. Raises Refused
    (a nested repository, a file too large) or GitError."""
    with tempfile.TemporaryDirectory(prefix="tribunal-index-") as folder:
        index = os.path.join(folder, "index")
        config = await no_filters(cwd=tree.path, git_dir=tree.git_dir)

        async def run(*args: str) -> str:
            return await git(
                *args,
                cwd=tree.path,
                git_dir=tree.git_dir,
                work_tree=tree.path,
                extra_config=config,
                index_file=index,
            )

        # Started from the branch (not the worktree's HEAD file, which nothing else reads).
        await run("read-tree", f"refs/heads/{tree.branch}")
        new = await run("ls-files", "-z", "--others", "--exclude-standard", "--", *pathspecs())
        _refuse(_untracked_problems(tree.path, new.split("\0"), max_file_bytes))
        await run("add", "--all", "--", *pathspecs())
        tree_id = (await run("write-tree")).strip()
        before = _entries(await run("ls-tree", "-r", "-l", "-z", "--full-tree", tree.base))
        after = _entries(await run("ls-tree", "-r", "-l", "-z", "--full-tree", tree_id))
    _refuse(_tree_problems(before, after, max_file_bytes))
    return tree_id


async def commit_as_is(policy: GroupPolicy, task: Task, why: str) -> str:
    """Commit what the worktree holds now, through the same snapshot, for what the engine
    itself wrote (a deliberation protocol's conclusion: its actors only read); the closing
    words about it, "" when the task works in place."""
    tree = worktrees.of(policy)
    if tree is None:
        return ""
    try:
        taken = await snapshot(tree, policy.max_commit_file_bytes)
    except (Refused, GitError, OSError) as exc:  # OSError: TimeoutError included
        return f"⚠️ The work could not be committed: {unreadable(exc)}"
    return await worktrees.commit_note(policy, task, taken, why)


def unreadable(exc: BaseException) -> str:
    """Why a snapshot could not be taken, in words (a git call past its time says nothing)."""
    if isinstance(exc, TimeoutError):
        return "git took too long"
    return str(exc) or type(exc).__name__


def _untracked_problems(root: str, paths: list[str], max_file_bytes: int) -> list[str]:
    problems: list[str] = []
    for rel in paths:
        if not rel:
            continue
        if rel.endswith("/"):  # how git lists a folder that is a repository of its own
            problems.append(_nested(rel.rstrip("/")))
            continue
        try:
            info = os.lstat(os.path.join(root, rel))
        except OSError:
            continue  # gone meanwhile: git will not add it either
        if stat.S_ISREG(info.st_mode) and info.st_size > max_file_bytes:
            problems.append(_too_large(rel, info.st_size, max_file_bytes))
    return problems


def _tree_problems(
    before: dict[str, _Entry], after: dict[str, _Entry], max_file_bytes: int
) -> list[str]:
    """What the snapshot adds or changes since the task's start that must not be committed
    (a changed blob's size was not measured before git read it: a tracked file that grew)."""
    problems: list[str] = []
    for path, entry in sorted(after.items()):
        if before.get(path) == entry:
            continue
        if entry.mode == GITLINK:
            problems.append(_nested(path))
        elif entry.size is not None and entry.size > max_file_bytes:
            problems.append(_too_large(path, entry.size, max_file_bytes))
    return problems


def _entries(listing: str) -> dict[str, _Entry]:
    """`git ls-tree -r -l -z` → path: (mode, object id, size)."""
    found: dict[str, _Entry] = {}
    for record in listing.split("\0"):
        if not record:
            continue
        head, _tab, path = record.partition("\t")
        mode, _kind, sha, size = head.split(maxsplit=3)
        found[path] = _Entry(mode, sha, int(size) if size.strip().isdigit() else None)
    return found


def _refuse(problems: list[str]) -> None:
    if not problems:
        return
    listed = problems[:LISTED]
    more = len(problems) - len(listed)
    text = "; ".join(listed) + (f"; and {more} more" if more else "")
    raise Refused(text)


def _nested(path: str) -> str:
    return f"`{path}` is a git repository of its own (a nested repository is not committed)"


def _too_large(path: str, size: int, limit: int) -> str:
    return (
        f"`{path}` is {_mib(size)}, over the {_mib(limit)} limit on a committed file "
        "(`commit_max_file_mb`)"
    )


def _mib(size: int) -> str:
    mib = 1024 * 1024
    return f"{size / mib:.1f} MiB" if size >= mib else f"{size} bytes"
