"""The workspace hash kept between turns (rooms/work/watched_tree.py) notices every kind of
change, both when inotify names what changed and when a pass stats every file; and what it
gives equals a one-off hash of the same tree (`tree_hash_sync`), so the detectors compare like
with like whichever way a hash was reached.

Each case changes a tree that was hashed already, then checks three things: the hash changed,
it equals a fresh hash of the new tree, and (watched) no whole pass was needed to see it.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rooms.work import hashed_tree, workspace
from rooms.work.hashed_tree import Budget, Reader
from rooms.work.watched_tree import WatchedTree, forget_all
from rooms.work.workspace import tree_hash, tree_hash_sync


def make_tree(root: Path) -> Path:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "src" / "pkg" / "mod.py").write_text("X = 1\n")
    (root / "README.md").write_text("# demo\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.symlink("README.md", root / "link")
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    return root


def rewrite_same_size_same_mtime(root: Path) -> None:
    path = root / "src" / "app.py"
    info = path.stat()
    time.sleep(0.02)  # past a timestamp tick, as a later turn is
    path.write_text("print('ho')\n")  # the same length
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size and path.stat().st_mtime_ns == info.st_mtime_ns


def retarget_link(root: Path) -> None:
    (root / "link").unlink()
    os.symlink("run.sh", root / "link")


def file_becomes_folder(root: Path) -> None:
    (root / "README.md").unlink()
    (root / "README.md").mkdir()
    (root / "README.md" / "inner").write_text("# demo\n")


def new_folder(root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "c").touch()


def deleted_folder(root: Path) -> None:
    (root / "src" / "pkg" / "mod.py").unlink()
    (root / "src" / "pkg").rmdir()


CHANGES: dict[str, Callable[[Path], object]] = {
    "content": lambda r: (r / "src" / "app.py").write_text("print('bye')\n"),
    "same size, same mtime": rewrite_same_size_same_mtime,
    "truncated": lambda r: os.truncate(r / "src" / "app.py", 0),
    "new file": lambda r: (r / "src" / "new.py").write_text(""),
    "deleted file": lambda r: (r / "README.md").unlink(),
    "mode": lambda r: os.chmod(r / "run.sh", 0o755),
    "symlink target": retarget_link,
    "renamed file": lambda r: (r / "README.md").rename(r / "README.txt"),
    "renamed folder": lambda r: (r / "src" / "pkg").rename(r / "src" / "lib"),
    "folder moved in": lambda r: (r.parent / "outside").rename(r / "src" / "vendored"),
    "folder moved out": lambda r: (r / "src" / "pkg").rename(r.parent / "gone"),
    "new folder": lambda r: new_folder(r),
    "deleted folder": lambda r: deleted_folder(r),
    "file becomes folder": file_becomes_folder,
    "hook planted": lambda r: (r / ".git" / "hooks" / "post-commit").write_text("#!/bin/sh\n"),
    "git config edited": lambda r: (r / ".git" / "config").write_text("[core]\n\tbare = 1\n"),
    "named pipe planted": lambda r: os.mkfifo(r / "pipe"),
}


def reader() -> Reader:
    return Reader(entry=workspace._entry, past=workspace._past)


def budget() -> Budget:
    return Budget(bytes_left=workspace.MAX_TOTAL_BYTES, files_left=workspace.MAX_FILES)


def prepared(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "dep.js").write_text("module.exports = 1\n")
    return make_tree(tmp_path / "w")


@pytest.mark.parametrize("use_inotify", [True, False], ids=["watched", "stat pass"])
@pytest.mark.parametrize("change", list(CHANGES.values()), ids=list(CHANGES))
def test_every_kind_of_change_is_seen_and_equals_a_fresh_hash(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path], object],
    use_inotify: bool,
) -> None:
    # Keys are trusted at once: a stat pass sees each change through the file's status alone.
    monkeypatch.setattr(hashed_tree, "RACY_NS", -(10**18))
    root = prepared(tmp_path)
    kept = WatchedTree(str(root), use_inotify=use_inotify)
    before = kept.hexdigest(reader(), budget())
    assert before == tree_hash_sync(str(root))
    if use_inotify:
        assert kept.watching
    change(root)
    after = kept.hexdigest(reader(), budget())
    assert after != before
    assert after == tree_hash_sync(str(root))
    if use_inotify:
        assert kept.passes == 1 and kept.watching  # seen from the events alone
    else:
        assert kept.passes == 2


@pytest.mark.parametrize("use_inotify", [True, False], ids=["watched", "stat pass"])
def test_nothing_changed_nothing_read_and_an_undone_change_hashes_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_inotify: bool
) -> None:
    """An unchanged tree reads no file again (old enough keys are trusted); a change undone
    gives the first hash back, which is what the oscillation detector looks for."""
    root = prepared(tmp_path)
    monkeypatch.setattr(hashed_tree, "RACY_NS", -(10**18))  # trust keys at once, for this test
    kept = WatchedTree(str(root), use_inotify=use_inotify)
    first = kept.hexdigest(reader(), budget())
    read: list[str] = []
    real = workspace._entry

    def counting(full: str, b: Budget) -> bytes:
        read.append(full)
        return real(full, b)

    monkeypatch.setattr(workspace, "_entry", counting)
    assert kept.hexdigest(reader(), budget()) == first
    assert read == []
    (root / "README.md").write_text("# changed\n")
    assert kept.hexdigest(reader(), budget()) != first
    assert read == [str(root / "README.md")]
    (root / "README.md").write_text("# demo\n")
    assert kept.hexdigest(reader(), budget()) == first


def test_a_key_from_the_tick_the_file_was_written_in_is_not_trusted(tmp_path: Path) -> None:
    """A rewrite within the same timestamp tick keeps size, mtime and ctime: such a fresh
    key is not kept, so the file is read again on the next pass (git's "racily clean")."""
    path = tmp_path / "fresh"
    path.write_text("one")
    fresh = hashed_tree.read_file(str(path), reader(), budget(), None, hashed_tree.racy_before())
    assert fresh.key is None
    old = hashed_tree.read_file(str(path), reader(), budget(), None, time.time_ns() + 10**9)
    assert old.key is not None


def test_the_root_replaced_by_another_folder_is_hashed_anew(tmp_path: Path) -> None:
    root = prepared(tmp_path)
    kept = WatchedTree(str(root))
    before = kept.hexdigest(reader(), budget())
    root.rename(tmp_path / "old")
    make_tree(root)
    (root / "extra").write_text("x")
    after = kept.hexdigest(reader(), budget())
    assert after != before and after == tree_hash_sync(str(root))


async def test_verify_sees_a_write_through_a_memory_map(tmp_path: Path) -> None:
    """A write through a shared memory map raises no inotify event, so the wrap-up's
    comparison passes over the whole tree: the map's write moved the file's ctime."""
    forget_all()
    root = prepared(tmp_path)
    path = root / "src" / "app.py"
    with path.open("r+b") as handle:  # opened before the hash: its close comes later
        before = await tree_hash(str(root))
        time.sleep(0.02)
        with mmap.mmap(handle.fileno(), 0) as mapped:
            mapped[0:5] = b"PRINT"
            mapped.flush()
        verified = await tree_hash(str(root), verify=True)
    assert verified != before
    assert verified == tree_hash_sync(str(root))


async def test_tree_hash_keeps_the_tree_between_calls(tmp_path: Path) -> None:
    forget_all()
    root = prepared(tmp_path)
    first = await tree_hash(str(root))
    (root / "src" / "app.py").write_text("print('bye')\n")
    second = await tree_hash(str(root))
    assert first != second == tree_hash_sync(str(root))
    (root / "src" / "app.py").write_text("print('hi')\n")
    assert await tree_hash(str(root)) == first
