"""A worktree per task, and the engine's commit of the approved work (DESIGN §6).

A group's workspace is a folder in a git repository (the user's checkout). Each task works in
a worktree of that repository under the data folder, `<data>/worktrees/<task id>-<slug>`, on the
branch `tribunal/<task id>-<slug>` started from the checkout's HEAD when the task first runs, so
two tasks of one group never see each other's files.

A task resumes only the branch this bot made for it, as the store records it (name, base commit,
repository, when: rooms/store/worktrees.py), never one that merely has its name: a branch of
that name may be planted by a repository, or left over from another bot or from before the data
folder was reset (task ids start again at 1). When the name (its branch, its folder or a
worktree git knows at that folder) is taken and the store has no record of making it for this
task, the task gets the next free name, `<task id>-<slug>-2`, `-3`, …, says so in its room, and
the record keeps both names. A recorded branch that no longer descends from its recorded base
was replaced by someone else: the task refuses it. The owner's container mounts the task's
worktree read-write, the reviewer's and the arbiter's read-only (the backends mount whatever
workspace the spec names); the run spec also names the worktree's git dir and the repository's
common git dir (`git_metadata`), which container backends mount read-only so agents can run git's
read commands on their task. When the workspace is a subfolder of its repository, the task works
in the same subfolder of its worktree.

After the approved wrap-up the engine (never an agent) commits the approved content on the
task's branch (the git tree recorded when the reviewer approved, rooms/work/snapshots.py), with a
message naming the task; the closing message names the branch, the commit and a diffstat of
that commit against where the task started, or says plainly that nothing changed.
The user's checkout is never touched: `git worktree add` adds the new branch, its objects and
the worktree's bookkeeping under the repository's `.git`, nothing in the checkout's files.

Every git call goes through rooms/work/gitsafe.py with the worktree's git dir named explicitly (the
one `git worktree add` made inside the group's repository, which containers mount read-only
at most), so a `.git` the owner plants in its worktree is never read. The worktree's own `.git`
file and any planted `.git` folder are part of the workspace hash (rooms/work/workspace.py); a
planted nested repository is refused from a commit (rooms/work/snapshots.py).

Decided for workspaces that are no git repository: a plain folder, or a repository without a
commit yet, has no branch to start from, and Tribunal will not `git init` or commit in a
user's folder on its own; such a workspace is used in place, as before worktrees existed: its
tasks share it and nothing is committed (the README says so). Without a data folder there is
nowhere to put worktrees, and the workspace is used in place as well. The branch starts from
the checkout's HEAD: changes not committed in the checkout are not part of the task.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Protocol

from rooms.base.model import GroupPolicy, RoomRef, Task
from rooms.base.records import Change, OutboxDraft, WorktreeRecord
from rooms.work.gitsafe import GitError, git, no_filters

FOLDER = "worktrees"
SLUG_WORDS = 6
SLUG_CHARS = 40
MAX_NAMES = 20  # `<id>-<slug>`, then `-2` … `-20`: after that the task is refused
_locks: dict[str, asyncio.Lock] = {}  # one `git worktree add` at a time per repository
# The worktrees made or found in this process, by task workspace: the commit at the end looks
# its worktree up here and never runs git discovery inside a folder an agent wrote.
_known: dict[str, Worktree] = {}


class WorktreeError(RuntimeError):
    """The task's worktree could not be made; the reason says why, for the room."""


class WorktreeRecords(Protocol):
    """What the worktrees need of the store (rooms/store/worktrees.py)."""

    async def worktree(self, task_id: int) -> WorktreeRecord | None: ...

    async def record_worktree(self, record: WorktreeRecord) -> None: ...


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


async def for_task(
    policy: GroupPolicy, task: Task, data_dir: str | None, records: WorktreeRecords, now: float
) -> tuple[GroupPolicy, str | None]:
    """The group's policy with the task's own worktree as its workspace (unchanged when the
    workspace is used in place: see the module's docstring), and a note for the room when the
    task's branch was just made under another name than its own. Raises WorktreeError."""
    made = await ensure(policy, task, data_dir, records, now)
    if made is None:
        return policy, None
    tree, note = made
    _known[tree.workspace] = tree
    return replace(policy, workspace=tree.workspace), note


async def ensure(
    policy: GroupPolicy, task: Task, data_dir: str | None, records: WorktreeRecords, now: float
) -> tuple[Worktree, str | None] | None:
    if policy.workspace is None or data_dir is None:
        return None
    found = await repository_of(policy.workspace)
    if found is None:
        return None
    top, sub = found
    folder = os.path.join(os.path.abspath(data_dir), FOLDER)
    common = await _common_dir(top)
    lock = _locks.setdefault(common, asyncio.Lock())
    note = None
    async with lock:
        record = await records.worktree(task.id)
        if record is None:
            record = await _make(top, common, folder, task, now)
            await records.record_worktree(record)
            note = _renamed(task, record)
        path = os.path.join(folder, record.name)
        if record.repository != common:
            raise WorktreeError(
                f"its branch `{record.branch}` was made in another repository"
                f" ({record.repository}), not in {common}"
            )
        git_dir = _admin_dir(common, path)
        if git_dir is None:
            await _add_again(top, common, path, record)
            git_dir = _admin_dir(common, path)
        if git_dir is None:
            raise WorktreeError(f"git made no worktree at {path}")
    workspace = os.path.join(path, sub) if sub else path
    return Worktree(path, workspace, git_dir, record.branch, record.base), note


def git_metadata(workspace: str | None) -> tuple[str, str] | None:
    """(the worktree's git dir, the repository's common git dir) of a task workspace made by
    `for_task`, for the run spec (container backends mount them read-only so git works in the
    container); None for a workspace used in place."""
    tree = _known.get(workspace or "")
    if tree is None:
        return None
    # `_admin_dir` found the git dir as `<common>/worktrees/<name>`.
    return tree.git_dir, os.path.dirname(os.path.dirname(tree.git_dir))


def of(policy: GroupPolicy) -> Worktree | None:
    """The task's worktree, for a policy from `for_task`; None when the workspace is used in
    place (nothing is committed then)."""
    return _known.get(policy.workspace or "")


async def commit(
    tree: Worktree, task: Task, snapshot: str, why: str = "Approved in review"
) -> Committed:
    """Commit the tree object `snapshot` (rooms/work/snapshots.py: the approved content, never the
    worktree as it is by now) on the task's branch, the engine's commit; `why` says in the
    message what made the work final. The diffstat compares that same commit with where the
    task started."""
    run = _in(tree, [])  # commit-tree, update-ref and diff of commits read no work tree
    ref = f"refs/heads/{tree.branch}"
    head = (await run("rev-parse", "--verify", f"{ref}^{{commit}}")).strip()
    if (await run("rev-parse", f"{head}^{{tree}}")).strip() != snapshot:
        title = " ".join(task.text.split())[:60] or "(no text)"
        message = f"Tribunal task #{task.id}: {title}\n\n{why}; committed by Tribunal."
        made = await run("commit-tree", "--no-gpg-sign", "-p", head, "-m", message, snapshot)
        # Compare-and-swap on the branch: it moves only from the commit the parent names.
        await run("update-ref", "-m", "tribunal: commit", ref, made.strip(), head)
        head = made.strip()
        # The worktree's own index follows, so `git status` there shows what is left; only
        # bookkeeping: the commit is made either way.
        with contextlib.suppress(GitError):
            await run("read-tree", head)
    if head == tree.base:
        return Committed(tree.branch, None, "")
    stat = await run("diff", "--stat", "--no-ext-diff", "--no-textconv", tree.base, head)
    return Committed(tree.branch, head, stat.rstrip("\n"))


async def commit_note(
    policy: GroupPolicy, task: Task, snapshot: str, why: str = "Approved in review"
) -> str:
    """The closing message's words about the work: branch, commit and diffstat; "" when the
    task worked in place (`policy` is the task's, from `for_task`)."""
    tree = of(policy)
    if tree is None:
        return ""
    try:
        return (await commit(tree, task, snapshot, why)).note()
    except GitError as exc:
        return f"⚠️ The work could not be committed: {exc}"


async def branch_head(
    policy: GroupPolicy, task: Task, records: WorktreeRecords
) -> tuple[str, str] | None:
    """(branch, its commit) of a task, read from the group's repository (the user's checkout,
    never a worktree); None when the task had no branch this bot made (a workspace used in
    place, or a task of a Tribunal that kept no record)."""
    record = await records.worktree(task.id)
    if policy.workspace is None or record is None:
        return None
    found = await repository_of(policy.workspace)
    if found is None:
        return None
    try:
        head = await git(
            "rev-parse", "--verify", "--quiet", f"refs/heads/{record.branch}", cwd=found[0]
        )
    except GitError:
        return None
    return record.branch, head.strip()


def refusal(task: Task, room: RoomRef, reason: str, now: float) -> Change:
    """Closes a task whose worktree could not be made, saying why in its room."""
    text = f"⚠️ Task #{task.id} cannot start: its own worktree could not be made ({reason})."
    draft = OutboxDraft(f"task:{task.id}:worktree", room, text, persona="tribunal")
    return Change(task.id, now, expect_version=task.version, event="stop", outbox=[draft])


def notice(task: Task, room: RoomRef, text: str, now: float) -> Change:
    """Posts the note `for_task` gave about the task's branch in its room."""
    draft = OutboxDraft(f"task:{task.id}:branch", room, text, persona="tribunal")
    return Change(task.id, now, outbox=[draft])


def _renamed(task: Task, record: WorktreeRecord) -> str | None:
    if record.name == record.wanted:
        return None
    return (
        f"ℹ️ A branch or worktree named `tribunal/{record.wanted}` exists already, and this bot"
        f" did not make it for task #{task.id}: the task works on its own new branch"
        f" `{record.branch}`, started from {record.base[:12]}, and leaves that one alone."
    )


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


async def _make(top: str, common: str, folder: str, task: Task, now: float) -> WorktreeRecord:
    """Make the task's branch and worktree under the first free name, from the checkout's HEAD.
    `git worktree add -b` never takes a branch that exists: what it makes is this bot's."""
    wanted = name_of(task)
    try:
        base = (await git("rev-parse", "--verify", "HEAD^{commit}", cwd=top)).strip()
        await git("worktree", "prune", cwd=top, git_dir=common)
        # The checkout of the new worktree runs no filter either (the branch is the user's).
        config = await no_filters(cwd=top, git_dir=common)
    except GitError as exc:
        raise WorktreeError(str(exc)) from None
    os.makedirs(folder, exist_ok=True)
    for n in range(1, MAX_NAMES + 1):
        name = wanted if n == 1 else f"{wanted}-{n}"
        path, branch = os.path.join(folder, name), f"tribunal/{name}"
        if os.path.lexists(path) or _admin_dir(common, path) or await _has_branch(top, branch):
            continue
        args = ["-b", branch, path, base]
        try:
            await git(
                "worktree", "add", "--quiet", *args, cwd=top, git_dir=common, extra_config=config
            )
        except GitError as exc:
            raise WorktreeError(str(exc)) from None
        return WorktreeRecord(task.id, name, wanted, branch, base, common, now)
    raise WorktreeError(
        f"the branches `tribunal/{wanted}` to `tribunal/{wanted}-{MAX_NAMES}` (or their folders)"
        " all exist already, and none was made by this bot for this task"
    )


async def _add_again(top: str, common: str, path: str, record: WorktreeRecord) -> None:
    """The recorded worktree is gone (its folder was removed): add it again on the task's own
    branch, or make the branch again at its base if that is gone too. A branch that no longer
    descends from the base is someone else's now, and is refused."""
    try:
        await git("worktree", "prune", cwd=top, git_dir=common)
        config = await no_filters(cwd=top, git_dir=common)
        if await _has_branch(top, record.branch):
            try:
                await git("merge-base", "--is-ancestor", record.base, record.branch, cwd=top)
            except GitError:
                raise WorktreeError(
                    f"its branch `{record.branch}` no longer descends from where the task"
                    f" started ({record.base[:12]}): someone replaced it"
                ) from None
            args = [path, record.branch]
        else:
            args = ["-b", record.branch, path, record.base]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        await git("worktree", "add", "--quiet", *args, cwd=top, git_dir=common, extra_config=config)
    except GitError as exc:
        raise WorktreeError(str(exc)) from None


async def _has_branch(top: str, branch: str) -> bool:
    try:
        await git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=top)
    except GitError:
        return False
    return True
