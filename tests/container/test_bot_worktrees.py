"""A console task whose workspace is a git checkout, through the bot on the Docker backend with
the real Claude runner in the runner image (fixtures of tests/container/test_bot_docker.py): the
engine, running as root, makes the task's worktree and hands it to the containers' user; the
agents' shells run git on their task (status, log) with the worktree's git metadata mounted
read-only, cannot commit or plant a hook, and the engine commits the approved work on the task's
branch, leaving the checkout as it was."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bot.app import open_app
from bot.settings import load_settings
from rooms.base.model import Inbound, RoomRef
from tests.container.test_bot_docker import (  # noqa: F401  (fixtures)
    MODEL_KEY,
    _containers,
    _script_pair,
    _tool_outputs,
    bot_env,
    instance,
)
from tests.fakes.messages_api import FakeMessagesAPI, text
from tests.fakes.platform import RecordingAdapter
from tests.rooms.git_helpers import git, make_repo

pytestmark = [pytest.mark.engine, pytest.mark.claude, pytest.mark.timeout(300)]

GIT_LOOK = "cd /workspace; git status --porcelain; git log -1 --format=%s"
GIT_WRITE = (
    "git -c user.name=x -c user.email=x@x commit -qm planted 2>&1 | tail -1; "
    'echo planted > "$(git rev-parse --git-common-dir)/hooks/post-checkout" || echo refused'
)


async def test_agents_run_git_on_their_task_and_only_the_engine_commits(
    bot_env: dict[str, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    docker_client: Any,
    instance: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "checkout")  # root's, as the bot's user makes its worktrees
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    monkeypatch.setenv("TRIBUNAL_CONSOLE__WORKSPACE", str(repo))
    with FakeMessagesAPI(default=text("DONE\nwrapped up")) as fake:
        owner = f"{GIT_LOOK}; echo hi > hello.txt; git status --porcelain"
        _script_pair(fake, owner, f"{GIT_LOOK}; git add hello.txt 2>&1 | tail -1; {GIT_WRITE}")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", MODEL_KEY)
        room = RoomRef("console", "local", "1")
        async with open_app(load_settings(env_file=None), RecordingAdapter("console")) as app:
            await app.engine.handle(
                Inbound(room, "alice", "create hello.txt saying hi", "ev-1", mentions_bot=True)
            )
            async with asyncio.timeout(240):
                await app.engine.idle()
            task = await app.store.latest_task_in(room)
            assert task is not None and task.status == "closed"
            turns = await app.store.turns(task.id)
            assert [(t.role, t.marker) for t in turns] == [
                ("owner", "DONE"),
                ("reviewer", "APPROVED"),
                ("owner", "DONE"),
            ]
        assert _containers(docker_client, instance) == []

    owner_saw, reviewer_saw = _tool_outputs(fake)
    assert owner_saw.splitlines() == ["start", "?? hello.txt"], owner_saw
    lines = reviewer_saw.splitlines()
    assert lines[:2] == ["?? hello.txt", "start"], reviewer_saw
    # Neither the index, nor a commit, nor a hook can be written from the container.
    assert all("Read-only file system" in line for line in lines[2:4]), reviewer_saw
    assert lines[-1] == "refused", reviewer_saw
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    # The engine committed the approved work on the task's branch; the checkout is untouched.
    [branch] = git(repo, "branch", "--list", "tribunal/*", "--format=%(refname:short)").split()
    assert git(repo, "show", f"{branch}:hello.txt") == "hi\n"
    assert git(repo, "status", "--porcelain") == "" and sorted(p.name for p in repo.iterdir()) == [
        ".git",
        "README.md",
    ]
