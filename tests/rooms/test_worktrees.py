"""A worktree per task, and the engine's commit of the approved work (DESIGN §6)."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

from rooms.base.model import GroupPolicy, RoomRef
from rooms.work.worktrees import slug
from tests.fakes.engine_kit import engine_kit
from tests.fakes.runner import Script, say
from tests.rooms.git_helpers import git, make_repo

OTHER_ROOM = RoomRef("test", "C1", "T2")  # the same channel, so the same group


def policy_for(workspace: Path) -> GroupPolicy:
    return GroupPolicy(name="g", workspace=str(workspace), approvers=frozenset({"boss"}))


async def test_two_tasks_of_one_group_each_work_in_their_own_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    both_wrote = asyncio.Event()
    script: Script = {
        "owner": [
            say("DONE\nA", files={"a.py": "a = 1\n"}, gate=both_wrote),
            say("DONE\nB", files={"b.py": "b = 1\n"}, gate=both_wrote),
            "DONE\nwrapped",
            "DONE\nwrapped",
        ],
        "reviewer": ["APPROVED", "APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy_for(repo)) as kit:
        await kit.say("@tribunal add a")
        await kit.runner.wait_calls(1)  # task 1's owner takes the first scripted reply
        await kit.say("@tribunal add b", room=OTHER_ROOM)
        await kit.runner.wait_calls(2)
        # Both owners have written and are still running: each worktree holds only its file.
        first, second = (Path(c.spec.workspace or "") for c in kit.runner.calls)
        assert first != second
        assert {p.name for p in first.iterdir()} == {".git", "README.md", "a.py"}
        assert {p.name for p in second.iterdir()} == {".git", "README.md", "b.py"}
        both_wrote.set()
        await kit.settle()
        for task_id in (1, 2):
            assert (await kit.task(task_id)).status == "closed"
        # Every turn of a task ran in that task's worktree; only the owner's may write.
        by_task: dict[str, set[str]] = {}
        for call in kit.runner.calls:
            by_task.setdefault(call.spec.env["TRIBUNAL_TASK"], set()).add(call.spec.workspace or "")
            assert call.spec.request.read_only == (call.role != "owner")
            # The git metadata container backends mount read-only: the repository's, and the
            # task's own git dir in it (found from the repository's side).
            common = os.path.realpath(repo / ".git")
            assert call.spec.git_common_dir == common
            assert os.path.dirname(call.spec.git_dir or "") == os.path.join(common, "worktrees")
        assert by_task == {"1": {str(first)}, "2": {str(second)}}
        assert first.parent == second.parent == tmp_path / "data" / "worktrees"
    # The user's checkout is untouched: no new files, a clean status, still on main.
    assert sorted(p.name for p in repo.iterdir()) == [".git", "README.md"]
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "branch", "--show-current").strip() == "main"
    # Each task's work is committed on its own branch, with its own file only.
    branches = git(repo, "branch", "--list", "tribunal/*", "--format=%(refname:short)").split()
    assert branches == ["tribunal/1-add-a", "tribunal/2-add-b"]
    assert git(repo, "show", "--name-only", "--format=%s", "tribunal/1-add-a").split("\n")[:3] == [
        "Tribunal task #1: add a",
        "",
        "a.py",
    ]
    assert "b.py" not in git(repo, "ls-tree", "-r", "--name-only", "tribunal/1-add-a")
    assert "a.py" not in git(repo, "ls-tree", "-r", "--name-only", "tribunal/2-add-b")
    assert git(repo, "log", "--format=%an", "-1", "tribunal/2-add-b").strip() == "Tribunal"


async def test_the_closing_message_names_branch_commit_and_diffstat(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    script: Script = {
        "owner": [say("DONE\nedited", files={"README.md": "hello\nworld\n"}), "DONE\nwrapped"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy_for(repo)) as kit:
        await kit.say("@tribunal greet the World!")
        await kit.settle()
        closing = kit.platform.texts()[-1]
    commit = git(repo, "rev-parse", "tribunal/1-greet-the-world").strip()
    assert closing.startswith("✅ Task #1 is done and closed. The work is committed on branch ")
    assert f"`tribunal/1-greet-the-world` as {commit[:12]}." in closing
    assert "README.md | 1 +" in closing and "1 file changed, 1 insertion(+)" in closing


async def test_a_task_that_changes_nothing_says_so_and_commits_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    start = git(repo, "rev-parse", "HEAD").strip()
    script: Script = {"owner": ["DONE\nnothing to do", "DONE\nwrapped"], "reviewer": ["APPROVED"]}
    async with engine_kit(tmp_path, script, policy=policy_for(repo)) as kit:
        await kit.say("@tribunal check the readme")
        await kit.settle()
        closing = kit.platform.texts()[-1]
    assert closing == (
        "✅ Task #1 is done and closed. Nothing changed: branch `tribunal/1-check-the-readme` "
        "is where the task started."
    )
    assert git(repo, "rev-parse", "tribunal/1-check-the-readme").strip() == start


async def test_a_subfolder_workspace_is_the_same_subfolder_of_the_worktree(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"app/main.py": "x = 1\n", "other.txt": "o\n"})
    script: Script = {
        "owner": [say("DONE", files={"new.py": "y = 2\n"}), "DONE"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy_for(repo / "app")) as kit:
        await kit.say("@tribunal add new.py")
        await kit.settle()
        workspace = Path(kit.runner.calls[0].spec.workspace or "")
    assert workspace.name == "app" and workspace.parent.parent.name == "worktrees"
    names = git(repo, "ls-tree", "-r", "--name-only", "tribunal/1-add-new-py").split()
    assert names == ["app/main.py", "app/new.py", "other.txt"]


async def test_a_folder_that_is_not_a_repository_is_used_in_place(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    script: Script = {
        "owner": [say("DONE", files={"x.py": "1\n"}), "DONE"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy_for(folder)) as kit:
        await kit.say("@tribunal add x")
        await kit.settle()
        assert {c.spec.workspace for c in kit.runner.calls} == {str(folder)}
        assert kit.platform.texts()[-1] == "✅ Task #1 is done and closed."
    assert (folder / "x.py").read_text() == "1\n"


def test_slugs_are_short_plain_words() -> None:
    assert slug("@tribunal Fix the *parser*: ünïcode & tabs, please now!") == (
        "fix-the-parser-n-code-tabs"
    )
    assert slug("!!!") == "task"
    assert re.fullmatch(r"[a-z0-9-]{1,40}", slug("x" * 100))


async def test_status_of_a_closed_task_shows_its_summary(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    script: Script = {
        "owner": [say("DONE\nedited", files={"a.py": "a = 1\n"}), "DONE\nwrapped"],
        "reviewer": ["APPROVED"],
    }
    async with engine_kit(tmp_path, script, policy=policy_for(repo)) as kit:
        await kit.say("@tribunal add a")
        await kit.settle()
        await kit.say("@tribunal status")
        await kit.settle()
        status = kit.platform.texts()[-1]
    commit = git(repo, "rev-parse", "tribunal/1-add-a").strip()
    assert status == (
        "No open task in this room. The last one, #1, is closed.\n"
        "Outcome: done: approved and wrapped up.\n"
        "It ran for 0 s.\n"
        f"Branch `tribunal/1-add-a` at {commit[:12]}.\n"
        "Turns: 3 · tokens: 360 · cost: $0.03.\n"
        # Where the markers came from (issue 26): the scripted turns answer in text only.
        "Markers: 3 read from text, 0 from objects\n"
        "Mention me with a task to start one."
    )


async def test_a_task_whose_worktree_cannot_be_made_is_closed_saying_why(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".git" / "worktrees").write_text("not a folder\n")  # git cannot add a worktree
    async with engine_kit(tmp_path, {}, policy=policy_for(repo)) as kit:
        await kit.say("@tribunal add a")
        await kit.settle()
        assert (await kit.task()).status == "closed"
        assert kit.runner.calls == []
        refusal = kit.platform.texts()[-1]
    assert refusal.startswith("⚠️ Task #1 cannot start: its own worktree could not be made (")
    assert "could not create leading directories" in refusal and "Not a directory" in refusal
