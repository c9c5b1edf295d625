"""The doctor's isolation lines for the Docker backend (bot/doctor_isolation.py): the network
setting (only "none" is isolated; anything else is a warning that says what an agent can
reach) and each group's workspace (writable by the containers' uid 1000, or the chown to run;
for a git checkout, whether the bot's user makes worktrees the containers' user can write).
The same lines through `tribunal doctor` against a real engine: tests/container/test_bot_docker.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot import doctor_isolation
from bot.doctor_isolation import check_network, check_workspaces
from bot.settings import load_settings
from container.workspace_access import hand_over
from tests.rooms.git_helpers import make_repo


@pytest.mark.parametrize(
    ("mode", "base_url", "isolated", "said"),
    [
        ("none", None, True, "ok (none: the containers have no network"),
        ("bridge", None, False, "network_mode bridge opts out of egress isolation"),
        ("bridge", None, False, "other hosts, and this host's services"),
        ("host", None, False, "everything this host can, its loopback services included"),
        ("my-net", None, False, "whatever the network lets them"),
        # The old trap: the default bridge and a model URL on 127.0.0.1.
        ("bridge", "http://127.0.0.1:8080", False, "the model URL http://127.0.0.1:8080 is on"),
        ("bridge", "http://localhost:8080", False, "http://localhost:8080 is on this host's"),
        ("bridge", "https://models.example.invalid", False, "TRIBUNAL_DOCKER__NETWORK_MODE=none"),
    ],
)
def test_the_network_line(
    monkeypatch: pytest.MonkeyPatch, mode: str, base_url: str | None, isolated: bool, said: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    extra = {"anthropic_base_url": base_url} if base_url else {}
    settings = load_settings(env_file=None, docker={"network_mode": mode}, **extra)
    ok, text = check_network(settings)
    assert ok is isolated and said in text, text
    if base_url and "invalid" in base_url:
        assert "loopback" not in text


def test_the_default_is_isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRIBUNAL_DOCKER__NETWORK_MODE", raising=False)
    assert load_settings(env_file=None).docker.network_mode == "none"


def test_a_workspace_the_container_user_cannot_write(tmp_path: Path) -> None:
    mine, roots = tmp_path / "mine", tmp_path / "roots"
    for folder in (mine, roots):
        folder.mkdir()
        os.chmod(folder, 0o755)
    os.chown(mine, 1000, 1000)
    settings = load_settings(
        env_file=None,
        console={"workspace": str(mine)},
        groups={"team": {"platform": "slack", "channel": "C1", "workspace": str(roots)}},
    )
    lines = {name: (ok, text) for name, ok, text in check_workspaces(settings)}
    assert lines["workspace console"] == (True, f"ok ({mine}, writable by 1000:1000)")
    ok, text = lines["workspace team"]
    assert not ok and f"run `chown -R 1000:1000 {roots}`" in text


def test_a_git_checkout_is_judged_by_who_makes_its_worktrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root's checkout, not writable by uid 1000: no matter, the tasks work in worktrees.
    repo = make_repo(tmp_path / "checkout")
    settings = load_settings(env_file=None, console={"workspace": str(repo)})
    [(_, ok, text)] = check_workspaces(settings)
    assert ok and "made by root, which hands each one to the containers' user 1000:1000" in text
    monkeypatch.setattr(doctor_isolation.os, "geteuid", lambda: 1000)
    [(_, ok, text)] = check_workspaces(settings)
    assert ok and "the containers' user" in text
    # Another user: the worktrees it makes are not the containers' user's; the backend says
    # the same at the owner's turn (container/workspace_access.py).
    monkeypatch.setattr(doctor_isolation.os, "geteuid", lambda: 1234)
    [(_, ok, text)] = check_workspaces(settings)
    assert not ok and "run the bot as uid 1000, or as root" in text
    tree = tmp_path / "worktree"
    tree.mkdir()
    said = hand_over(str(tree), "1000:1000")
    assert said is not None and "run the bot as uid 1000, or as root" in said
    assert os.stat(tree).st_uid == 0  # nothing was chowned
