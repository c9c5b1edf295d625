"""`tribunal doctor` lines about isolation on the Docker backend: the containers' network, and
whether the containers' user can write each group's workspace.

- network: `network_mode = "none"` (the default) is the isolated setup: no network in the
  containers, the model APIs only through the credential proxy (bot/proxy.py). Any other mode
  opts out of that: a warning (not a failure: it may be meant) that says what an agent can
  reach then, and that model URLs on this host's loopback are reached by the proxy either way.
- workspace <group>: a folder in no git repository with a commit is used in place: the owner's
  container mounts it read-write as uid 1000, and a folder that user cannot write fails the check
  (the owner's turns would fail), with the `chown` to run. In a git checkout each task works in its
  own worktree, which the engine makes as the bot's user (rooms/work/worktrees.py) and mounts
  instead; the checkout is mounted nowhere, so its owner does not matter: the bot's user does.
  Root, or the containers' uid itself, is fine (root hands each worktree to the containers' user,
  container/workspace_access.py); any other uid fails the check, as its owner turns would.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from urllib.parse import urlsplit

from bot.settings import Settings
from container.docker_pool import DockerConfig
from container.workspace_access import parse_user, workspace_problem
from rooms.work.worktrees import repository_of

ISOLATED = "none"
_REACH = {
    "host": "everything this host can, its loopback services included",
    "bridge": "other hosts, and this host's services through the bridge's gateway",
}


def _loopback_model_urls(settings: Settings) -> list[str]:
    urls = [settings.anthropic_base_url, settings.openai_base_url]
    found = []
    for url in urls:
        host = urlsplit(url).hostname if url else None
        if host in ("localhost", "::1") or (host or "").startswith("127."):
            found.append(str(url))
    return found


def check_network(settings: Settings) -> tuple[bool, str]:
    """(isolated, the doctor's text) for the Docker backend's network setting."""
    mode = settings.docker.network_mode
    if mode == ISOLATED:
        return True, (
            "ok (none: the containers have no network; the model APIs only through the "
            "credential proxy)"
        )
    reach = _REACH.get(mode, "whatever the network lets them")
    text = (
        f"network_mode {mode} opts out of egress isolation: an agent can reach {reach}. Set "
        "TRIBUNAL_DOCKER__NETWORK_MODE=none (the default) so the containers reach only the "
        "credential proxy"
    )
    loopback = _loopback_model_urls(settings)
    if loopback:
        text += (
            f"; the model URL {', '.join(loopback)} is on this host's loopback, which the "
            "proxy reaches with any network mode"
        )
    return False, text


def check_workspaces(settings: Settings) -> Iterator[tuple[str, bool, str]]:
    """(line name, ok, text) per group with a workspace."""
    user = DockerConfig().user
    for name, _, _, group in settings.all_groups():
        if group.workspace is None:
            continue
        if asyncio.run(repository_of(str(group.workspace))) is not None:
            yield f"workspace {name}", *_worktrees(str(group.workspace), user)
            continue
        problem = workspace_problem(str(group.workspace), user)
        if problem is None:
            yield f"workspace {name}", True, f"ok ({group.workspace}, writable by {user})"
        else:
            yield f"workspace {name}", False, problem


def _worktrees(workspace: str, user: str) -> tuple[bool, str]:
    """(ok, text) for a git checkout, whose tasks work in worktrees the bot's user makes."""
    me, ids = os.geteuid(), parse_user(user)
    made = f"{workspace} is a git checkout: each task works in its own worktree, made by"
    if ids is None:
        return True, f"ok ({made} uid {me}; the containers' user {user} is a name, not judged)"
    if me == ids[0]:
        return True, f"ok ({made} this user, uid {me}, the containers' user)"
    if me == 0:
        return True, f"ok ({made} root, which hands each one to the containers' user {user})"
    return False, (
        f"{made} this bot's user, uid {me}, which the containers' user {user} cannot write: run "
        f"the bot as uid {ids[0]}, or as root (which hands each task's worktree to {user})"
    )
