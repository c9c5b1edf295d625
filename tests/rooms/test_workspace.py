"""The workspace tree hash: deterministic, sensitive to the work, blind to .git and caches."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rooms.work import workspace
from rooms.work.workspace import tree_hash, tree_hash_sync


def make_tree(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "README.md").write_text("# demo\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    return root


async def test_none_and_missing_paths_hash_to_none(tmp_path: Path) -> None:
    assert await tree_hash(None) is None
    assert await tree_hash(str(tmp_path / "nope")) is None
    (tmp_path / "file").write_text("x")
    assert await tree_hash(str(tmp_path / "file")) is None


async def test_same_content_same_hash_anywhere_and_every_time(tmp_path: Path) -> None:
    a = make_tree(tmp_path / "a")
    b = make_tree(tmp_path / "b")
    first = await tree_hash(str(a))
    assert first is not None and len(first) == 64
    assert await tree_hash(str(a)) == first
    assert await tree_hash(str(b)) == first


async def test_an_empty_folder_has_a_hash(tmp_path: Path) -> None:
    assert await tree_hash(str(tmp_path)) is not None


@pytest.mark.parametrize(
    "change",
    [
        lambda r: (r / "src" / "app.py").write_text("print('bye')\n"),
        lambda r: (r / "src" / "new.py").write_text(""),
        lambda r: (r / "README.md").unlink(),
        lambda r: (r / "README.md").rename(r / "README.txt"),
        lambda r: os.chmod(r / "run.sh", 0o755),
        lambda r: os.symlink("README.md", r / "link"),
    ],
    ids=["edit", "add", "delete", "rename", "chmod+x", "symlink"],
)
async def test_every_change_to_the_work_changes_the_hash(tmp_path: Path, change: object) -> None:
    root = make_tree(tmp_path / "w")
    before = await tree_hash(str(root))
    change(root)  # type: ignore[operator]
    assert await tree_hash(str(root)) != before


async def test_git_and_tool_caches_are_ignored(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "w")
    before = await tree_hash(str(root))
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "src" / ".git").mkdir()  # a submodule's .git is skipped too
    (root / "src" / ".git" / "index").write_bytes(b"\x00\x01")
    (root / "src" / "__pycache__").mkdir()
    (root / "src" / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\x00")
    (root / ".pytest_cache").mkdir()
    (root / ".pytest_cache" / "v").write_text("{}")
    assert await tree_hash(str(root)) == before


async def test_large_files_count_by_status_not_content_and_a_rewrite_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file too big to read counts by its status. Size and mtime alone are not enough: a
    rewrite to the same size with the mtime set back is seen through ctime (a write sets it to
    now; utime cannot set it) and the inode (a replacement is another file)."""
    monkeypatch.setattr(workspace, "MAX_FILE_BYTES", 16)
    root = make_tree(tmp_path / "w")
    big = root / "big.bin"
    big.write_bytes(b"a" * 64)
    os.utime(big, ns=(1_000_000_000, 1_000_000_000))
    before = await tree_hash(str(root))
    assert tree_hash_sync(str(root)) == before  # not read either way: the same status
    big.write_bytes(b"b" * 64)  # same size, same mtime
    os.utime(big, ns=(1_000_000_000, 1_000_000_000))
    assert await tree_hash(str(root)) != before
    assert tree_hash_sync(str(root)) != before


async def test_the_file_count_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace, "MAX_FILES", 2)
    root = make_tree(tmp_path / "w")
    before = await tree_hash(str(root))
    (root / "src" / "app.py").write_text("changed past the bound\n")  # third file in order
    after_edit = await tree_hash(str(root))
    (root / "zzz.txt").write_text("one more file")
    assert after_edit == before  # past the bound, content is not read...
    assert await tree_hash(str(root)) != before  # ...but the number of files still counts


async def test_unreadable_files_do_not_fail_the_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "w")
    os.symlink("does-not-exist", root / "dangling")
    secret = root / "secret"
    secret.write_text("x")
    readable = await tree_hash(str(root))
    # chmod 0 alone stops nobody when the tests run as root: the read itself is refused too.
    real_entry = workspace._file_entry

    def refused(full: str, budget: workspace._Budget) -> bytes:
        if full.endswith("secret"):
            raise PermissionError(13, "Permission denied", full)
        return real_entry(full, budget)

    monkeypatch.setattr(workspace, "_file_entry", refused)
    secret.chmod(0)
    try:
        unreadable = await tree_hash(str(root))
    finally:
        secret.chmod(0o644)
    assert unreadable is not None and unreadable != readable  # the refusal is hashed as a fact


async def test_hashing_runs_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    real = workspace._entry

    def spy(full: str, budget: workspace.Budget) -> bytes:
        threads.append(threading.get_ident())
        return real(full, budget)

    monkeypatch.setattr(workspace, "_entry", spy)
    await tree_hash(str(make_tree(tmp_path / "w")))
    assert threads and threads[0] != threading.get_ident()


def _write(path: Path, text: str, *, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


@pytest.mark.parametrize(
    "plant",
    [
        lambda g: _write(g / "config", "[core]\n\tfsmonitor = /tmp/x\n"),
        lambda g: _write(g / "config.worktree", "[core]\n\thooksPath = /tmp\n"),
        lambda g: _write(g / "hooks" / "post-commit", "#!/bin/sh\ntouch /tmp/x\n", mode=0o755),
        lambda g: _write(g / "info" / "attributes", "* filter=evil\n"),
    ],
    ids=["config", "config.worktree", "hook", "info"],
)
@pytest.mark.parametrize("where", [".git", "src/.git"])
async def test_what_git_runs_or_obeys_in_a_git_folder_changes_the_hash(
    tmp_path: Path, plant: object, where: str
) -> None:
    """A wrap-up that plants a hook or edits the git configuration goes back to review."""
    root = make_tree(tmp_path / "w")
    (root / where / "objects").mkdir(parents=True)
    _write(root / where / "config", "[core]\n\tbare = false\n")
    _write(root / where / "hooks" / "pre-commit.sample", "#!/bin/sh\n")
    before = await tree_hash(str(root))
    plant(root / where)  # type: ignore[operator]
    assert await tree_hash(str(root)) != before


async def test_a_hook_made_executable_changes_the_hash(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "w")
    _write(root / ".git" / "hooks" / "pre-commit", "#!/bin/sh\ntouch /tmp/x\n")
    before = await tree_hash(str(root))
    (root / ".git" / "hooks" / "pre-commit").chmod(0o755)
    assert await tree_hash(str(root)) != before


async def test_a_git_file_is_hashed_like_any_file(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "w")
    (root / ".git").write_text("gitdir: /repo/.git/worktrees/one\n")
    before = await tree_hash(str(root))
    (root / ".git").write_text("gitdir: /tmp/planted\n")
    assert await tree_hash(str(root)) != before
