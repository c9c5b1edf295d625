"""Whether the containers' user can write a workspace (container/workspace_access.py), by the
folder's owner, group and mode; and the Docker backend refusing an owner's turn at once when
it cannot (real engine), while a read-only role still runs."""

from __future__ import annotations

import os
from pathlib import Path

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
