"""What is committed is what the reviewer approved (rooms/pair/approval.py,
rooms/work/snapshots.py).

Each test is an owner that changes the work behind the reviewer's back, during its wrap-up turn
(or with content the old workspace hash did not read): compiled Python, a file past the old
8 MiB hash limit, a nested git repository. In every case the planted content is not on the task's
branch (read with `git ls-tree` / `git cat-file` in the group's repository), and the work goes
back to review or the people are asked, saying why in the room.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from rooms.base.model import GroupPolicy
from rooms.pair import approval
from rooms.work import snapshots, worktrees
from tests.fakes.engine_kit import Kit, engine_kit
from tests.fakes.runner import Script, say
from tests.rooms.git_helpers import git, make_repo

MIB = 1024 * 1024
BRANCH = "tribunal/1-add-a"


def policy_for(repo: Path, **kw: object) -> GroupPolicy:
    return GroupPolicy(name="g", workspace=str(repo), approvers=frozenset({"boss"}), **kw)  # type: ignore[arg-type]


def names_on_branch(repo: Path) -> list[str]:
    return git(repo, "ls-tree", "-r", "--name-only", BRANCH).split()


def gitlinks_on_branch(repo: Path) -> list[str]:
    return [line for line in git(repo, "ls-tree", "-r", BRANCH).splitlines() if "commit" in line]


async def worktree_of_wrapup(kit: Kit) -> Path:
    """Waits for the wrap-up (the owner's second turn) and returns the task's worktree."""
    call = await kit.runner.wait_calls(3)
    assert call.role == "owner"
    return Path(call.spec.workspace or "")


async def test_compiled_python_planted_in_the_wrap_up_is_never_committed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    planted = asyncio.Event()
    script: Script = {
        "owner": [
            say("DONE\nadded a", files={"a.py": "a = 1\n"}),
            say("DONE\nwrapped", gate=planted),
        ],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy_for(repo)) as kit:
        await kit.say("@tribunal add a")
        worktree = await worktree_of_wrapup(kit)
        # A cached module next to its source, and a sourceless one, both importable code.
        (worktree / "__pycache__").mkdir()
        (worktree / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\xa7\r\r\n" + b"EVIL")
        (worktree / "evil.pyc").write_bytes(b"\xa7\r\r\n" + b"EVIL")
        (worktree / "lib" / "__pycache__").mkdir(parents=True)
        (worktree / "lib" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"EVIL")
        planted.set()
        await kit.settle()
        closing = kit.platform.texts()[-1]
        task = await kit.task()
    assert task.status == "closed"
    assert "committed on branch `tribunal/1-add-a`" in closing
    assert names_on_branch(repo) == ["README.md", "a.py"]
    assert "EVIL" not in git(repo, "log", "-p", "--all", "--format=")
    # The commit is the very tree the reviewer approved.
    assert git(repo, "rev-parse", f"{BRANCH}^{{tree}}").strip() == task.approved_tree


async def test_a_file_past_the_size_limit_is_refused_not_committed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    start = git(repo, "rev-parse", "HEAD").strip()
    planted = asyncio.Event()
    script: Script = {
        "owner": [
            say("DONE\nadded a", files={"a.py": "a = 1\n"}),
            say("DONE\nwrapped", gate=planted),
            "DONE\nwrapped again",
        ],
        "reviewer": ["APPROVED", "APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy_for(repo)) as kit:
        await kit.say("@tribunal add a")
        worktree = await worktree_of_wrapup(kit)
        (worktree / "blob.bin").write_bytes(b"\x00" * (9 * MIB))  # past the old 8 MiB skip
        planted.set()
        await kit.settle()
        texts = kit.platform.texts()
        task = await kit.task()
        esc = await kit.store.open_escalation(1)
    assert "blob.bin" not in names_on_branch(repo)
    assert git(repo, "rev-parse", BRANCH).strip() == start  # nothing committed
    # The wrap-up changed the work: back to review; the re-approved work cannot be committed
    # with it, so the people are asked, and the room says why.
    assert kit.roles() == ["owner", "reviewer", "owner", "reviewer"]
    assert task.status == "waiting_human"
    assert esc is not None and esc.kind == "commit"
    assert "`blob.bin` is 9.0 MiB, over the 8.0 MiB limit" in esc.question
    assert any(
        t.startswith("⚠️ The reviewer approved, but the approved work cannot be committed: ")
        and "`blob.bin` is 9.0 MiB" in t
        and "`commit_max_file_mb`" in t
        for t in texts
    )


async def test_a_large_file_changed_without_a_new_size_or_time_goes_back_to_review(
    tmp_path: Path,
) -> None:
    """The old hash read a file over 8 MiB by its size and mtime only: an owner that rewrote it
    in the wrap-up, same size, mtime put back, got the unreviewed content committed."""
    repo = make_repo(tmp_path / "repo")
    start = git(repo, "rev-parse", "HEAD").strip()
    wrote, planted = asyncio.Event(), asyncio.Event()
    script: Script = {
        "owner": [say("DONE\nadded data", gate=wrote), say("DONE\nwrapped", gate=planted)],
        # The second review asks for changes; the owner has nothing more to say (its runs
        # fail), so the task ends up with the people.
        "reviewer": ["APPROVED", "CHANGES_REQUESTED\nF1: what is this?"],
    }
    policy = policy_for(repo, max_commit_file_bytes=16 * MIB)
    async with engine_kit(tmp_path, script, policy=policy) as kit:
        await kit.say("@tribunal add a")
        first = await kit.runner.wait_calls(1)
        data = Path(first.spec.workspace or "") / "data.bin"
        data.write_bytes(b"reviewed" + b"\x00" * (9 * MIB))  # there before the review
        os.utime(data, ns=(1_000_000_000, 1_000_000_000))
        wrote.set()
        worktree = await worktree_of_wrapup(kit)
        assert worktree / "data.bin" == data
        data.write_bytes(b"PLANTED!" + b"\x00" * (9 * MIB))  # same size...
        os.utime(data, ns=(1_000_000_000, 1_000_000_000))  # ...same mtime
        planted.set()
        await kit.settle()
        texts = kit.platform.texts()
    assert "data.bin" not in names_on_branch(repo)  # neither content was committed
    assert git(repo, "rev-parse", BRANCH).strip() == start
    assert kit.roles()[:4] == ["owner", "reviewer", "owner", "reviewer"]
    assert any(
        t.startswith("The owner changed the work while wrapping up; the reviewer checks it again.")
        for t in texts
    )


async def test_a_nested_repository_planted_in_the_wrap_up_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    start = git(repo, "rev-parse", "HEAD").strip()
    planted = asyncio.Event()
    script: Script = {
        "owner": [
            say("DONE\nadded a", files={"a.py": "a = 1\n"}),
            say("DONE\nwrapped", gate=planted),
            "DONE\nwrapped again",
        ],
        "reviewer": ["APPROVED", "APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy_for(repo)) as kit:
        await kit.say("@tribunal add a")
        worktree = await worktree_of_wrapup(kit)
        make_repo(worktree / "vendor", {"evil.py": "import os; os.system('id')\n"})
        planted.set()
        await kit.settle()
        texts = kit.platform.texts()
        task = await kit.task()
        esc = await kit.store.open_escalation(1)
    assert gitlinks_on_branch(repo) == [] and "vendor" not in " ".join(names_on_branch(repo))
    assert git(repo, "rev-parse", BRANCH).strip() == start
    assert task.status == "waiting_human"
    assert esc is not None and esc.kind == "commit"
    assert "`vendor` is a git repository of its own" in esc.question
    assert any(
        t.startswith("The owner changed the work while wrapping up (the work cannot be committed: ")
        and "`vendor` is a git repository of its own" in t
        for t in texts
    )


async def test_a_nested_repository_is_refused_at_approval(tmp_path: Path) -> None:
    """The nested repository is there when the reviewer approves: the old hash read none of its
    history (objects, refs), so a commit made inside it later went unseen; it is refused at
    the approval, before any wrap-up."""
    repo = make_repo(tmp_path / "repo")
    start = git(repo, "rev-parse", "HEAD").strip()
    planted = asyncio.Event()
    script: Script = {
        "owner": [
            say("DONE\nadded a", files={"a.py": "a = 1\n"}, gate=planted),
            "DONE\nwrapped",
        ],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy_for(repo)) as kit:
        await kit.say("@tribunal add a")
        first = await kit.runner.wait_calls(1)
        make_repo(Path(first.spec.workspace or "") / "vendor", {"lib.py": "x = 1\n"})
        planted.set()
        await kit.settle()
        task = await kit.task()
        esc = await kit.store.open_escalation(1)
    assert gitlinks_on_branch(repo) == []
    assert git(repo, "rev-parse", BRANCH).strip() == start
    assert kit.roles() == ["owner", "reviewer"]  # no wrap-up: the approval is not taken
    assert task.status == "waiting_human"
    assert esc is not None and esc.kind == "commit"
    assert "`vendor` is a git repository of its own" in esc.question


async def test_a_wrap_up_whose_tree_cannot_be_taken_goes_back_to_review(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When in doubt, not approved: git past its time (e.g. a file swapped for a pipe under
    `git add`) after the wrap-up is a change, never a commit of whatever is there."""
    repo = make_repo(tmp_path / "repo")
    start = git(repo, "rev-parse", "HEAD").strip()
    calls: list[int] = []

    async def slow_after_approval(tree: worktrees.Worktree, limit: int) -> str:
        calls.append(limit)
        if len(calls) > 1:
            raise TimeoutError
        return await snapshots.snapshot(tree, limit)

    monkeypatch.setattr(approval, "snapshot", slow_after_approval)
    script: Script = {
        "owner": [say("DONE\nadded a", files={"a.py": "a = 1\n"}), "DONE\nwrapped"],
        "reviewer": ["APPROVED", "CHANGES_REQUESTED\nF1: look again"],
    }
    async with engine_kit(tmp_path, script, policy=policy_for(repo)) as kit:
        await kit.say("@tribunal add a")
        await kit.settle()
        texts = kit.platform.texts()
    assert git(repo, "rev-parse", BRANCH).strip() == start
    assert kit.roles()[:4] == ["owner", "reviewer", "owner", "reviewer"]
    assert (
        "The owner changed the work while wrapping up (the work could not be read: git took too "
        "long); the reviewer checks it again." in texts
    )
