"""`tribunal doctor` lines about isolation on the Docker backend: the containers' network, and
whether the containers' user can write each group's workspace.

- network: `network_mode = "none"` (the default) is the isolated setup: no network in the
  containers, the model APIs only through the credential proxy (bot/proxy.py). Any other mode
  opts out of that: a warning (not a failure: it may be meant) that says what an agent can
  reach then, and that model URLs on this host's loopback are reached by the proxy either way.
- workspace <group>: the owner's container mounts it read-write as uid 1000; a folder that user
  cannot write fails the check (the owner's turns would fail), with the `chown` to run.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from bot.settings import Settings
from container.docker_pool import DockerConfig
from container.workspace_access import workspace_problem

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
        problem = workspace_problem(str(group.workspace), user)
        if problem is None:
            yield f"workspace {name}", True, f"ok ({group.workspace}, writable by {user})"
        else:
            yield f"workspace {name}", False, problem
