"""The tree the engine commits (rooms/work/snapshots.py): `git add --all` + `write-tree` into an
index of its own, the repository's ignore rules and the fixed exclusions respected, nested
repositories and files over the limit refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rooms.base.model import GroupPolicy, Task
from rooms.base.records import WorktreeRecord
from rooms.work import worktrees
from rooms.work.snapshots import EXCLUDED, Refused, pathspecs, snapshot
from tests.rooms.git_helpers import git, make_repo

LIMIT = 1024


class Records:
    """The store's worktree records, in memory (rooms/work/worktrees.py: WorktreeRecords)."""

    def __init__(self) -> None:
        self.rows: dict[int, WorktreeRecord] = {}

    async def worktree(self, task_id: int) -> WorktreeRecord | None:
        return self.rows.get(task_id)

    async def record_worktree(self, record: WorktreeRecord) -> None:
        self.rows[record.task_id] = record


async def worktree(tmp_path: Path, files: dict[str, str] | None = None) -> worktrees.Worktree:
    repo = make_repo(tmp_path / "repo", files)
    task = Task(id=1, room="r", group="g", text="add a", status="owner_turn", version=0,
                created_at=0.0, updated_at=0.0)  # fmt: skip
    policy = GroupPolicy(name="g", workspace=str(repo))
    made = await worktrees.ensure(policy, task, str(tmp_path), Records(), 0.0)
    assert made is not None
    return made[0]


def listing(tree: worktrees.Worktree, tree_id: str) -> dict[str, str]:
    """path → blob content of a tree, read from the repository."""
    names = git(Path(tree.path), "ls-tree", "-r", "--name-only", tree_id).split()
    return {n: git(Path(tree.path), "cat-file", "-p", f"{tree_id}:{n}") for n in names}


def test_every_exclusion_is_a_pathspec_at_any_depth() -> None:
    assert pathspecs()[0] == "."
    assert pathspecs()[1:] == [
        ":(exclude,glob)**/__pycache__/**",
        ":(exclude,glob)**/*.pyc",
        ":(exclude,glob)**/*.pyo",
        ":(exclude,glob)**/.pytest_cache/**",
        ":(exclude,glob)**/.mypy_cache/**",
        ":(exclude,glob)**/.ruff_cache/**",
        ":(exclude,glob)**/.hypothesis/**",
    ]
    assert len(EXCLUDED) == len(pathspecs()) - 1


async def test_the_snapshot_is_the_work_without_caches_and_ignored_files(tmp_path: Path) -> None:
    tree = await worktree(tmp_path, {"README.md": "hi\n", ".gitignore": "build/\n"})
    root = Path(tree.path)
    (root / "a.py").write_text("a = 1\n")
    for rel in (
        "__pycache__/a.cpython-311.pyc",
        "pkg/__pycache__/m.cpython-311.pyc",
        "evil.pyc",
        "pkg/deep/evil.pyo",
        ".pytest_cache/v/cache",
        "pkg/.mypy_cache/x.json",
        ".ruff_cache/x",
        ".hypothesis/examples/x",
        "build/out.txt",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("EVIL")
    os.mkfifo(root / "pipe")  # not a file git can hold
    taken = await snapshot(tree, LIMIT)
    assert listing(tree, taken) == {
        ".gitignore": "build/\n",
        "README.md": "hi\n",
        "a.py": "a = 1\n",
    }
    assert await snapshot(tree, LIMIT) == taken  # the same work, the same tree
    (root / "a.py").write_text("a = 2\n")
    assert await snapshot(tree, LIMIT) != taken


async def test_an_excluded_path_the_base_tracks_stays_as_the_base_has_it(tmp_path: Path) -> None:
    tree = await worktree(tmp_path, {"README.md": "hi\n", "tool.pyc": "base\n"})
    root = Path(tree.path)
    (root / "tool.pyc").write_text("EVIL\n")
    assert listing(tree, await snapshot(tree, LIMIT)) == {"README.md": "hi\n", "tool.pyc": "base\n"}
    (root / "tool.pyc").unlink()
    assert listing(tree, await snapshot(tree, LIMIT)) == {"README.md": "hi\n", "tool.pyc": "base\n"}


async def test_the_worktrees_own_index_is_not_touched(tmp_path: Path) -> None:
    tree = await worktree(tmp_path)
    (Path(tree.path) / "a.py").write_text("a = 1\n")
    index = Path(tree.git_dir) / "index"
    before = index.read_bytes()
    await snapshot(tree, LIMIT)
    assert index.read_bytes() == before


@pytest.mark.parametrize(
    ("plant", "message"),
    [
        (lambda r: (r / "big.bin").write_bytes(b"x" * (LIMIT + 1)),
         "`big.bin` is 1025 bytes, over the 1024 bytes limit"),
        (lambda r: (r / "README.md").write_bytes(b"x" * (LIMIT + 1)),  # a tracked file grows
         "`README.md` is 1025 bytes, over the 1024 bytes limit"),
        (lambda r: make_repo(r / "vendor"), "`vendor` is a git repository of its own"),
        (lambda r: make_repo(r / "lib" / "sub"), "`lib/sub` is a git repository of its own"),
    ],
    ids=["new large file", "grown tracked file", "nested repository", "deeper nested repository"],
)  # fmt: skip
async def test_what_must_not_be_committed_is_refused(
    tmp_path: Path, plant: object, message: str
) -> None:
    tree = await worktree(tmp_path)
    plant(Path(tree.path))  # type: ignore[operator]
    with pytest.raises(Refused) as refused:
        await snapshot(tree, LIMIT)
    assert message in str(refused.value)


async def test_a_nested_repository_without_a_commit_is_refused_too(tmp_path: Path) -> None:
    """`git add` itself fails on one ("does not have a commit checked out")."""
    tree = await worktree(tmp_path)
    (Path(tree.path) / "empty").mkdir()
    git(Path(tree.path) / "empty", "init", "-q")
    (Path(tree.path) / "empty" / "x.py").write_text("x\n")
    with pytest.raises(Refused, match="`empty` is a git repository of its own"):
        await snapshot(tree, LIMIT)


async def test_a_large_file_the_base_already_had_is_not_refused(tmp_path: Path) -> None:
    tree = await worktree(tmp_path, {"README.md": "hi\n", "data.bin": "x" * (LIMIT + 1)})
    (Path(tree.path) / "a.py").write_text("a = 1\n")
    assert "a.py" in listing(tree, await snapshot(tree, LIMIT))


async def test_many_refusals_are_named_a_few_at_a_time(tmp_path: Path) -> None:
    tree = await worktree(tmp_path)
    for n in range(8):
        (Path(tree.path) / f"big{n}.bin").write_bytes(b"x" * (LIMIT + 1))
    with pytest.raises(Refused) as refused:
        await snapshot(tree, LIMIT)
    assert str(refused.value).count("over the") == 5
    assert str(refused.value).endswith("; and 3 more")
