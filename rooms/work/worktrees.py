"""A worktree per task, and the engine's commit of the approved work (DESIGN §6).

A group's workspace is a folder in a git repository (the user's checkout). Each task works in
a worktree of that repository under the data folder, `<data>/worktrees/<task id>-<slug>`, on the
branch `tribunal/<task id>-<slug>` started from the checkout's HEAD when the task first runs, so
two tasks of one group never see each other's files. The owner's container mounts the task's
worktree read-write, the reviewer's and the arbiter's read-only (the backends mount whatever
workspace the spec names); the run spec also names the worktree's git dir and the repository's
common git dir (`git_metadata`), which container backends mount read-only so agents can run git's
read commands on their task. When the workspace is a subfolder of its repository, the task works
in the same subfolder of its worktree.

After the approved wrap-up the engine (never an agent) commits everything in the worktree on
the task's branch, with a message naming the task; the closing message names the branch, the
commit and a diffstat against where the task started, or says plainly that nothing changed.
The user's checkout is never touched: `git worktree add` adds the new branch, its objects and
the worktree's bookkeeping under the repository's `.git`, nothing in the checkout's files.

Every git call goes through rooms/work/gitsafe.py with the worktree's git dir named explicitly (the
one `git worktree add` made inside the group's repository, which containers mount read-only
at most), so a `.git` the owner plants in its worktree is never read. The worktree's own `.git`
file and any planted `.git` folder are part of the workspace hash (rooms/work/workspace.py).

Decided for workspaces that are no git repository: a plain folder, or a repository without a
commit yet, has no branch to start from, and Tribunal will not `git init` or commit in a
user's folder on its own; such a workspace is used in place, as before worktrees existed: its
tasks share it and nothing is committed (the README says so). Without a data folder there is
nowhere to put worktrees, and the workspace is used in place as well. The branch starts from
the checkout's HEAD: changes not committed in the checkout are not part of the task.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from rooms.base.model import GroupPolicy, RoomRef, Task
from rooms.base.records import Change, OutboxDraft
from rooms.work.gitsafe import GitError, git, no_filters

FOLDER = "worktrees"
SLUG_WORDS = 6
SLUG_CHARS = 40
_locks: dict[str, asyncio.Lock] = {}  # one `git worktree add` at a time per repository
# The worktrees made or found in this process, by task workspace: the commit at the end looks
# its worktree up here and never runs git discovery inside a folder an agent wrote.
_known: dict[str, Worktree] = {}


class WorktreeError(RuntimeError):
    """The task's worktree could not be made; the reason says why, for the room."""


@dataclass(frozen=True)
class Worktree:
    path: str  # the worktree's top folder
    workspace: str  # where the task works: the same subfolder as the group's workspace
    git_dir: str  # the worktree's git dir, inside the group's repository
    branch: str
    base: str  # the commit the task started from


@dataclass(frozen=True)
class Committed:
    branch: str
    commit: str | None  # None: nothing changed, nothing committed
    diffstat: str

    def note(self) -> str:
        if self.commit is None:
            return f"Nothing changed: branch `{self.branch}` is where the task started."
        stat = f"\n```\n{self.diffstat}\n```" if self.diffstat else ""
        return f"The work is committed on branch `{self.branch}` as {self.commit[:12]}.{stat}"


def slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower().replace("@tribunal", " "))
    joined = "-".join(words[:SLUG_WORDS])[:SLUG_CHARS].strip("-")
    return joined or "task"


def name_of(task: Task) -> str:
    return f"{task.id}-{slug(task.text)}"


def branch_of(task: Task) -> str:
    return f"tribunal/{name_of(task)}"


async def repository_of(workspace: str) -> tuple[str, str] | None:
    """(top folder, subfolder) of the git checkout holding `workspace`; None when it is not in
    a git repository with a commit."""
    if not os.path.isdir(workspace):
        return None
    try:
        top = (await git("rev-parse", "--show-toplevel", cwd=workspace)).strip()
        await git("rev-parse", "--verify", "HEAD^{commit}", cwd=workspace)
    except GitError:
        return None
    rel = os.path.relpath(os.path.realpath(workspace), os.path.realpath(top))
    return top, "" if rel == "." else rel


async def for_task(policy: GroupPolicy, task: Task, data_dir: str | None) -> GroupPolicy:
    """The group's policy with the task's own worktree as its workspace (unchanged when the
    workspace is used in place: see the module's docstring). Raises WorktreeError."""
    tree = await ensure(policy, task, data_dir)
    if tree is None:
        return policy
    _known[tree.workspace] = tree
    return replace(policy, workspace=tree.workspace)


async def ensure(policy: GroupPolicy, task: Task, data_dir: str | None) -> Worktree | None:
    if policy.workspace is None or data_dir is None:
        return None
    found = await repository_of(policy.workspace)
    if found is None:
        return None
    top, sub = found
    path = os.path.join(os.path.abspath(data_dir), FOLDER, name_of(task))
    common = await _common_dir(top)
    lock = _locks.setdefault(common, asyncio.Lock())
    async with lock:
        git_dir = _admin_dir(common, path)
        if git_dir is None:
            await _add(top, common, path, branch_of(task))
            git_dir = _admin_dir(common, path)
        if git_dir is None:
            raise WorktreeError(f"git made no worktree at {path}")
    base = await _base(path, git_dir)
    return Worktree(path, os.path.join(path, sub) if sub else path, git_dir, branch_of(task), base)


def git_metadata(workspace: str | None) -> tuple[str, str] | None:
    """(the worktree's git dir, the repository's common git dir) of a task workspace made by
    `for_task`, for the run spec (container backends mount them read-only so git works in the
    container); None for a workspace used in place."""
    tree = _known.get(workspace or "")
    if tree is None:
        return None
    # `_admin_dir` found the git dir as `<common>/worktrees/<name>`.
    return tree.git_dir, os.path.dirname(os.path.dirname(tree.git_dir))


async def commit(tree: Worktree, task: Task, why: str = "Approved in review") -> Committed:
    """Commit everything in the worktree on the task's branch (the engine's commit); `why`
    says in the message what made the work final."""
    run = _in(tree, await no_filters(cwd=tree.path, git_dir=tree.git_dir))
    await run("add", "--all", "--", ".")
    staged = await run("diff", "--cached", "--name-only", "--no-ext-diff")
    if staged.strip():
        title = " ".join(task.text.split())[:60] or "(no text)"
        message = f"Tribunal task #{task.id}: {title}\n\n{why}; committed by Tribunal."
        await run("commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", message)
    head = (await run("rev-parse", "HEAD")).strip()
    if head == tree.base:
        return Committed(tree.branch, None, "")
    stat = await run("diff", "--stat", "--no-ext-diff", "--no-textconv", tree.base, head)
    return Committed(tree.branch, head, stat.rstrip("\n"))


async def commit_note(policy: GroupPolicy, task: Task, why: str = "Approved in review") -> str:
    """The closing message's words about the work: branch, commit and diffstat; "" when the
    task worked in place (`policy` is the task's, from `for_task`)."""
    tree = _known.get(policy.workspace or "")
    if tree is None:
        return ""
    try:
        return (await commit(tree, task, why)).note()
    except GitError as exc:
        return f"⚠️ The work could not be committed: {exc}"


async def branch_head(policy: GroupPolicy, task: Task) -> tuple[str, str] | None:
    """(branch, its commit) of a task, read from the group's repository (the user's checkout,
    never a worktree); None when the task had no branch (a workspace used in place)."""
    if policy.workspace is None:
        return None
    found = await repository_of(policy.workspace)
    if found is None:
        return None
    branch = branch_of(task)
    try:
        head = await git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=found[0])
    except GitError:
        return None
    return branch, head.strip()


def refusal(task: Task, room: RoomRef, reason: str, now: float) -> Change:
    """Closes a task whose worktree could not be made, saying why in its room."""
    text = f"⚠️ Task #{task.id} cannot start: its own worktree could not be made ({reason})."
    draft = OutboxDraft(f"task:{task.id}:worktree", room, text, persona="tribunal")
    return Change(task.id, now, expect_version=task.version, event="stop", outbox=[draft])


def _in(tree: Worktree, config: list[str]) -> Callable[..., Awaitable[str]]:
    async def run(*args: str) -> str:
        return await git(
            *args, cwd=tree.path, git_dir=tree.git_dir, work_tree=tree.path, extra_config=config
        )

    return run


async def _common_dir(top: str) -> str:
    common = (await git("rev-parse", "--git-common-dir", cwd=top)).strip()
    return os.path.realpath(os.path.join(top, common))


def _admin_dir(common: str, path: str) -> str | None:
    """The git dir of the worktree at `path`, found from the repository's side (its
    `worktrees/*/gitdir` files), never from the `.git` file in the worktree, which the owner
    can rewrite."""
    folder = os.path.join(common, "worktrees")
    want = os.path.join(path, ".git")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    for name in names:
        try:
            with open(os.path.join(folder, name, "gitdir"), encoding="utf-8") as f:
                if os.path.realpath(f.read().strip()) == os.path.realpath(want):
                    return os.path.join(folder, name)
        except OSError:
            continue
    return None


async def _add(top: str, common: str, path: str, branch: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        exists = True
        await git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=top)
    except GitError:
        exists = False
    args = [path, branch] if exists else ["-b", branch, path, "HEAD"]
    try:
        await git("worktree", "prune", cwd=top, git_dir=common)
        # The checkout of the new worktree runs no filter either (the branch is the user's).
        config = await no_filters(cwd=top, git_dir=common)
        await git("worktree", "add", "--quiet", *args, cwd=top, git_dir=common, extra_config=config)
    except GitError as exc:
        raise WorktreeError(str(exc)) from None


async def _base(path: str, git_dir: str) -> str:
    """Where the task started: HEAD when the worktree was first seen, kept in its git dir."""
    base_file = os.path.join(git_dir, "tribunal-base")
    try:
        with open(base_file, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        pass
    head = (await git("rev-parse", "HEAD", cwd=path, git_dir=git_dir, work_tree=path)).strip()
    with open(base_file, "w", encoding="utf-8") as f:
        f.write(head + "\n")
    return head
