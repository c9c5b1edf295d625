"""The workspace hash cannot be made to hang (rooms/work/workspace.py): a file swapped for a
named pipe (or for a symlink to one) between the walk's `lstat` and the read is not read, and
the whole hash has a deadline.

The swap is made with real files at the moment the hash has looked at the file: `os.lstat` is
wrapped so that, right after it returns the regular file's status, the test replaces the file,
as an agent racing the hash would. Each hash runs in a thread of its own, joined with a guard:
before the fix it blocked for ever in `open()` of the pipe, and the guard (not a timed
assertion) turns that into a failure, then opens the pipe's other end to set the thread free.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from rooms.work import workspace
from rooms.work.workspace import tree_hash, tree_hash_sync

GUARD_S = 10.0  # far longer than hashing three small files takes; only a hang reaches it


def make_tree(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "README.md").write_text("# demo\n")
    return root


def swap_for_fifo(target: Path, pipe: Path) -> None:
    target.unlink()
    os.mkfifo(target)


def swap_for_link_to_fifo(target: Path, pipe: Path) -> None:
    target.unlink()
    target.symlink_to(pipe)


def hash_guarded(root: Path, pipe: Path) -> str | None:
    """tree_hash_sync in a thread; fails the test (after freeing the thread) when it hangs."""
    result: list[str | None] = []
    worker = threading.Thread(target=lambda: result.append(tree_hash_sync(str(root))), daemon=True)
    worker.start()
    worker.join(GUARD_S)
    if worker.is_alive():
        # Free the reader blocked in open(): a writer's non-blocking open succeeds when one waits.
        for candidate in (root / "src" / "app.py", pipe):
            with contextlib.suppress(OSError):
                os.close(os.open(candidate, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(GUARD_S)
        pytest.fail("the workspace hash hung on a file swapped for a named pipe")
    return result[0]


@pytest.mark.parametrize("swap", [swap_for_fifo, swap_for_link_to_fifo], ids=["fifo", "symlink"])
def test_a_file_swapped_for_a_named_pipe_after_lstat_does_not_hang_the_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swap: Callable[[Path, Path], None]
) -> None:
    root = make_tree(tmp_path / "w")
    target = root / "src" / "app.py"
    pipe = tmp_path / "outside.fifo"
    os.mkfifo(pipe)
    real_lstat = os.lstat
    swapped: list[str] = []

    def racing_lstat(path: object, *args: object, **kw: object) -> os.stat_result:
        info = real_lstat(path, *args, **kw)  # type: ignore[arg-type]
        if not swapped and os.fspath(path) == str(target):  # type: ignore[call-overload]
            swapped.append(str(path))
            swap(target, pipe)  # the agent wins the race: the status said "regular file"
        return info

    monkeypatch.setattr(os, "lstat", racing_lstat)
    digest = hash_guarded(root, pipe)
    monkeypatch.undo()
    assert swapped == [str(target)]
    # Hashed as what it is now (not a regular file's content), and differently from before.
    assert digest is not None and len(digest) == 64
    target.unlink()
    target.write_text("print('hi')\n")
    assert tree_hash_sync(str(root)) != digest


def test_a_planted_named_pipe_is_present_but_never_read(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "w")
    before = tree_hash_sync(str(root))
    os.mkfifo(root / "pipe")
    planted = hash_guarded(root, root / "pipe")
    assert planted is not None and planted != before


async def test_the_whole_hash_has_a_deadline(tmp_path: Path) -> None:
    """Past its deadline the hash stops reading and says "not the same as anything": a
    wrap-up compared with it counts as changed (when in doubt, not approved)."""
    root = make_tree(tmp_path / "w")
    full = await tree_hash(str(root))
    late = await tree_hash(str(root), timeout_s=0)
    again = await tree_hash(str(root), timeout_s=0)
    assert late is not None and again is not None and len(late) == 64
    assert len({full, late, again}) == 3


async def test_a_read_stuck_in_the_kernel_is_left_behind_at_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline holds even when one read never returns (a hung file system) and the walk
    cannot check its clock: the engine goes on with a never-equal hash; the stuck thread ends
    when its read does."""
    root = make_tree(tmp_path / "w")
    normal = tree_hash_sync(str(root))
    release = threading.Event()
    real = workspace._file_entry

    def hung(full: str, budget: workspace._Budget) -> bytes:
        release.wait(GUARD_S)  # without the backstop, the hash waits all this and is normal
        return real(full, budget)

    monkeypatch.setattr(workspace, "_file_entry", hung)
    monkeypatch.setattr(workspace, "_past", lambda deadline: False)
    monkeypatch.setattr(workspace, "BACKSTOP_S", 0.0)
    try:
        late = await tree_hash(str(root), timeout_s=0.05)
    finally:
        release.set()
    assert late is not None and len(late) == 64 and late != normal
