"""Git inside a task's containers (container/git_mounts.py): in the real runner image, every role
runs git's read commands on its task's worktree and sees the owner's change; nothing in a container
can commit, plant a hook or a config, or see the other task's worktree or git dir; a `.git` the
owner rewrites changes no mount; bad metadata paths are refused before any container exists.
The worktrees are made by root, as in a root deployment: the backend hands the owner's to the
container user (container/workspace_access.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from container.git_mounts import GitMountError, git_mounts
from rooms.work.worktrees import _admin_dir
from tests.container.conftest import PROGRAMS, MakeBackend, collect, spec
from tests.rooms.git_helpers import git, make_repo


def _task_worktrees(tmp_path: Path) -> tuple[Path, list[tuple[Path, str]]]:
    """A checkout and two task worktrees made as rooms/work/worktrees.py makes them, by the engine's
    user (root here, as in a root deployment): (common git dir, [(worktree, its git dir)])."""
    repo = make_repo(tmp_path / "checkout")
    common = Path(os.path.realpath(repo / ".git"))
    trees = []
    for name in ("1-one", "2-two"):
        path = tmp_path / "data" / "worktrees" / name
        git(repo, "worktree", "add", "--quiet", "-b", f"tribunal/{name}", str(path), "HEAD")
        admin = _admin_dir(str(common), str(path))
        assert admin is not None
        trees.append((path, admin))
    return common, trees


def _sh(docker_client: Any, container_id: str, script: str) -> tuple[int, str]:
    done = docker_client.containers.get(container_id).exec_run(["sh", "-c", script])
    return done.exit_code, done.output.decode()


@pytest.mark.engine
@pytest.mark.timeout(180)
async def test_git_reads_its_own_task_and_writes_nothing(
    make_backend: MakeBackend, docker_client: Any, tmp_path: Path
) -> None:
    common, [(mine, my_git), (other, other_git)] = _task_worktrees(tmp_path)
    backend = make_backend()

    def task_spec(prompt: str, role: str = "owner") -> Any:
        run = spec(prompt, role=role, workspace=mine)
        return run.model_copy(update={"git_dir": my_git, "git_common_dir": str(common)})

    # The worktree is root's, as the engine made it: handed to the container user, it is
    # writable by the owner (the other task's is not handed over before its own turn).
    assert (mine / "README.md").stat().st_uid == 0
    events = await collect(backend, task_spec("write /workspace/README.md changed by one"))
    assert events[-1].kind == "final", events
    assert (mine / "README.md").stat().st_uid == 1000 and (other / "README.md").stat().st_uid == 0
    owner = backend.pool.held()[("g1", "owner", str(mine))]
    sh = lambda script: _sh(docker_client, owner, script)  # noqa: E731

    assert sh("git log -1 --format=%s") == (0, "start\n")
    assert sh("git status --porcelain") == (0, " M README.md\n")
    status, diff = sh("git diff")
    assert status == 0 and "+changed by one" in diff
    assert sh("git rev-parse --abbrev-ref HEAD") == (0, "tribunal/1-one\n")

    # Nothing of git's can be written from inside: no commit, hook, config, ref or object.
    status, said = sh("git -c user.name=x -c user.email=x@x commit -qam planted")
    assert status != 0 and "Read-only file system" in said
    for attempt in (
        f"echo 'exit 0' > {common}/hooks/pre-commit",
        f"echo x > {my_git}/hooks-x",
        "git config core.hooksPath /tmp",
        "git update-ref refs/heads/planted HEAD",
        "echo x | git hash-object -w --stdin",
    ):
        status, said = sh(attempt)
        assert status != 0, (attempt, said)
    assert not (common / "hooks" / "pre-commit").exists()
    assert "planted" not in git(common.parent, "branch", "--list")

    # The other task: neither its worktree nor its git dir (index, HEAD) is there to read.
    assert sh(f"ls {common}/worktrees") == (0, f"{os.path.basename(my_git)}\n")
    for path in (other, other_git, other.parent):
        assert sh(f"ls {path}")[0] != 0, path
    assert sh(f"echo x > {other}/README.md")[0] != 0
    assert (other / "README.md").read_text() == "hello\n"

    # The owner rewrites its `.git` to name another folder; the reviewer's container, made
    # now, still mounts only what the spec names, and reads the owner's change read-only.
    (mine / ".git").write_text(f"gitdir: {other_git}\n")
    events = await collect(backend, task_spec("echo reviewed", role="reviewer"))
    assert events[-1].kind == "final", events
    reviewer = backend.pool.held()[("g1", "reviewer", str(mine))]
    mounts = docker_client.api.inspect_container(reviewer)["Mounts"]
    binds = {m["Source"]: (m["Destination"], m["RW"]) for m in mounts if m["Type"] == "bind"}
    assert binds == {
        str(mine): ("/workspace", False),
        str(common): (str(common), False),
        my_git: (my_git, False),
        str(PROGRAMS): ("/opt/test-runners", False),
    }
    (mine / ".git").write_text(f"gitdir: {my_git}\n")
    status, diff = _sh(docker_client, reviewer, "git diff --stat")
    assert status == 0 and "README.md" in diff


def test_metadata_paths_are_checked_and_other_worktrees_hidden(tmp_path: Path) -> None:
    common = tmp_path / "repo.git"
    (common / "worktrees" / "t1").mkdir(parents=True)
    with pytest.raises(GitMountError):
        git_mounts(str(common / "worktrees" / "t1"), None, podman=True)
    with pytest.raises(GitMountError):
        git_mounts("worktrees/t1", str(common), podman=True)
    with pytest.raises(GitMountError):
        git_mounts(str(tmp_path / "missing"), str(common), podman=True)
    mounts = git_mounts(str(common / "worktrees" / "t1"), str(common), podman=True)
    assert set(mounts.volumes) == {str(common), str(common / "worktrees" / "t1")}
    assert all(v["mode"] == "ro" for v in mounts.volumes.values())
    assert mounts.tmpfs == {str(common / "worktrees"): "ro,notmpcopyup,size=64k,mode=755"}
    docker = git_mounts(str(common / "worktrees" / "t1"), str(common), podman=False)
    assert docker.tmpfs == {str(common / "worktrees"): "ro,size=64k,mode=755"}
    assert git_mounts(None, None, podman=True).volumes == {}
