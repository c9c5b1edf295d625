"""Whether the containers' user can write a workspace (container/workspace_access.py), by the
folder's owner, group and mode; and the Docker backend refusing an owner's turn at once when
it cannot (real engine), while a read-only role still runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from container.workspace_access import hand_over, parse_user, workspace_problem
from runners.protocol import SETUP
from tests.container.conftest import MakeBackend, collect, spec


@pytest.mark.parametrize(
    ("uid", "gid", "mode", "user", "writable"),
    [
        (1000, 1000, 0o755, "1000:1000", True),
        (1000, 0, 0o500, "1000:1000", False),  # owner without write
        (0, 0, 0o755, "1000:1000", False),  # root's folder, the usual mistake
        (0, 1000, 0o775, "1000:1000", True),  # the group may write
        (0, 1000, 0o755, "1000:1000", False),
        (0, 0, 0o777, "1000:1000", True),  # anyone may write
        (0, 0, 0o1777, "1000:1000", True),
        (0, 0, 0o776, "1000:1000", False),  # writable but not searchable
        (0, 0, 0o700, "0:0", True),  # root in the container
        (0, 0, 0o700, "runner", True),  # a name: not judged
    ],
)
def test_writable_by_owner_group_and_mode(
    tmp_path: Path, uid: int, gid: int, mode: int, user: str, writable: bool
) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    os.chown(folder, uid, gid)
    os.chmod(folder, mode)
    problem = workspace_problem(str(folder), user)
    assert (problem is None) == writable, problem
    if problem is not None:
        assert f"chown -R 1000:1000 {folder}" in problem and f"uid {uid}" in problem


def test_paths_this_host_lacks_and_names_are_not_judged(tmp_path: Path) -> None:
    assert workspace_problem(str(tmp_path / "absent"), "1000:1000") is None
    assert parse_user("1000") == (1000, 1000) and parse_user("1000:5") == (1000, 5)
    assert parse_user("runner") is None and parse_user("1000:staff") is None


def test_a_task_worktree_is_handed_over_without_following_links(tmp_path: Path) -> None:
    tree, outside = tmp_path / "worktree", tmp_path / "outside.txt"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.py").write_text("a = 1\n")
    outside.write_text("the host's\n")
    (tree / "link").symlink_to(outside)
    (tree / "dirlink").symlink_to(tmp_path)
    assert os.geteuid() == 0  # the tests run as root, as a root deployment does
    assert hand_over(str(tree), "1000:1000") is None
    for path in (tree, tree / "src", tree / "src" / "a.py", tree / "link", tree / "dirlink"):
        assert os.lstat(path).st_uid == 1000, path
    assert outside.stat().st_uid == 0 and tmp_path.stat().st_uid == 0


@pytest.mark.engine
@pytest.mark.timeout(120)
async def test_an_owner_turn_on_an_unwritable_workspace_fails_at_once(
    make_backend: MakeBackend, tmp_path: Path
) -> None:
    workspace = tmp_path / "root-owned"
    workspace.mkdir()
    os.chmod(workspace, 0o755)  # root's, as a checkout made by root is
    backend = make_backend()
    events = await collect(backend, spec("write /workspace/a.txt x", workspace=workspace))
    assert [e.kind for e in events] == ["error"] and events[0].code == SETUP
    assert f"chown -R 1000:1000 {workspace}" in events[0].text
    reviewer = await collect(backend, spec("echo reads", role="reviewer", workspace=workspace))
    assert reviewer[-1].kind == "final" and reviewer[-1].text == "reads"


class _SwapAfterListing:
    """os.scandir, except that right after it lists the folder `listed` (by path or by file
    descriptor) the folder `swap` is swapped for a symlink to `outside` (what a uid-1000
    process racing the walk does; deterministic here). The walker gets the real listing."""

    def __init__(self, listed: Path, swap: Path, outside: Path) -> None:
        self.real = os.scandir
        self.target = os.stat(listed)
        self.path, self.outside = swap, outside
        self.swapped = False

    def __call__(self, where: Any = ".") -> Any:
        entries = self.real(where)
        with entries:
            listed = list(entries)
        seen = os.stat(where)
        if not self.swapped and (seen.st_dev, seen.st_ino) == (
            self.target.st_dev,
            self.target.st_ino,
        ):
            self.swapped = True
            self.path.rename(self.path.with_name(self.path.name + ".real"))
            self.path.symlink_to(self.outside)
        return _Listing(listed)


class _Listing:
    def __init__(self, entries: list[Any]) -> None:
        self._it = iter(entries)

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __iter__(self) -> _Listing:
        return self

    def __next__(self) -> Any:
        return next(self._it)

    def close(self) -> None:
        return None


def _host_folder(at: Path, names: list[str]) -> dict[Path, int]:
    """A root-owned host folder with files named like the worktree's; their owners."""
    at.mkdir()
    for name in names:
        (at / name).write_text("the host's\n")
    (at / "deeper").mkdir(exist_ok=True)
    (at / "deeper" / "key").write_text("the host's\n")
    return {p: os.lstat(p).st_uid for p in (at, *at.rglob("*"))}


@pytest.mark.parametrize("swapped", ["the folder being walked", "a folder not yet entered"])
def test_a_folder_swapped_for_a_link_during_the_hand_over_never_moves_host_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped: str
) -> None:
    # The attack of issue 24 #4: the container user swaps a folder of the worktree for a
    # symlink to a host folder while root walks it; a chown by path then lands on the host.
    tree = tmp_path / "worktree"
    (tree / "src" / "deeper").mkdir(parents=True)
    for name in ("passwd", "shadow"):
        (tree / "src" / name).write_text("x\n")
    (tree / "src" / "deeper" / "key").write_text("x\n")
    host = _host_folder(tmp_path / "host", ["passwd", "shadow"])
    # The swap comes right after the walker lists `src` itself, or right after it lists the
    # worktree's top (before it goes into `src`).
    listed = tree / "src" if swapped == "the folder being walked" else tree
    swap = _SwapAfterListing(listed, tree / "src", tmp_path / "host")
    monkeypatch.setattr(os, "scandir", swap)
    assert os.geteuid() == 0
    hand_over(str(tree), "1000:1000")
    assert swap.swapped
    assert {p: os.lstat(p).st_uid for p in host} == host  # no host file changed owner
    assert os.lstat(tree).st_uid == 1000  # the worktree itself was handed over


# Mounts a tmpfs on the worktree's `mnt` in a mount namespace of its own (gone with it) and
# hands the worktree over there; prints the owners of the mounted file and of the worktree.
_IN_NAMESPACE = """
import os, subprocess, sys
from container.workspace_access import hand_over
tree = sys.argv[1]
subprocess.run(["mount", "-t", "tmpfs", "none", os.path.join(tree, "mnt")], check=True)
with open(os.path.join(tree, "mnt", "f"), "w") as f:
    f.write("another filesystem's")
print(hand_over(tree, "1000:1000"))
print(os.lstat(os.path.join(tree, "mnt")).st_uid, os.lstat(os.path.join(tree, "mnt", "f")).st_uid)
"""


def test_the_hand_over_stays_on_the_worktrees_own_filesystem(tmp_path: Path) -> None:
    # A folder of another filesystem inside the worktree (a mount) is not entered.
    tree = tmp_path / "worktree"
    (tree / "mnt").mkdir(parents=True)
    (tree / "a.py").write_text("a = 1\n")
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) to make a mount namespace")
    argv = [unshare, "--mount", "--propagation", "private", sys.executable, "-c", _IN_NAMESPACE]
    repo = Path(__file__).parents[2]
    done = subprocess.run([*argv, str(tree)], capture_output=True, text=True, cwd=repo)
    if done.returncode != 0 and "mount" in done.stderr:
        pytest.skip(f"cannot mount here: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr
    said, owners = done.stdout.splitlines()
    assert said == "None"
    assert owners == "0 0"  # the mount and what is in it keep their owner
    assert os.lstat(tree).st_uid == 1000 and os.lstat(tree / "a.py").st_uid == 1000
