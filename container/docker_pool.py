"""The long-lived runner containers: one per (group, role, workspace), created on first use,
labelled.

A task works in its own worktree (rooms/work/worktrees.py), so the workspace is part of the key:
each task has its own container per role, mounting only that task's worktree (the owner's
read-write, the other roles' read-only) and its git metadata read-only (container/git_mounts.py),
reused for every turn of that task, so the agents keep their HOME (sessions resume) when two
tasks of a group take turns, and no task's container ever sees another task's worktree.

Labels: `tribunal.managed=1`, `tribunal.instance` (which bot deployment), `tribunal.group`,
`tribunal.role`, `tribunal.workspace`, `tribunal.key` (a digest of the three, the slot), and
`tribunal.config` (a hash of everything the container was created with: image id, workspace, git
metadata, mount mode, limits, network, user).

The rule for containers found on the engine (at start, and when a turn needs a container):
- same instance, same group/role/workspace and same config hash, and running: reused (a bot
  restart keeps the agents' HOME, so their sessions can resume); any runner processes still
  recorded in it are killed first (a turn interrupted by the crash must not keep writing);
- same instance, anything else (another config, stopped, a duplicate): removed;
- another instance: left alone (another bot sharing the engine). Give every deployment its own
  stable instance id; the default is "default".

And for the containers this process holds (tasks end, but nothing tells the backend): when a turn
needs a container, a container with no turn running goes when its last turn ended more than
`DockerConfig.max_idle_s` ago (default 6 h; adopted ones count from their adoption), and when
the group would hold more than `DockerConfig.max_per_group` (default 6: two tasks of three
roles), the group's least recently used ones with no turn running go first. A container in use
is never removed (the cap may be exceeded while they all are). A removed one is simply made again
when its task takes a turn, without its HOME.

A held container is not inspected before each turn (a round trip per turn, for a state that
almost never changes): the backend finds one that died or was removed when its exec cannot
start, and `discard` (which asks the engine then, once) makes room for a new one.

All methods are blocking (docker SDK); the backend calls them through asyncio.to_thread.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from container.docker_exec import IDLE_COMMAND, KILL_ALL, run_script
from container.git_mounts import SAFE_WORKSPACE_ENV, WORKSPACE, git_mounts

log = logging.getLogger(__name__)

MANAGED = "tribunal.managed"
INSTANCE = "tribunal.instance"
GROUP = "tribunal.group"
ROLE = "tribunal.role"
CONFIG = "tribunal.config"
WORKSPACE_LABEL = "tribunal.workspace"
KEY = "tribunal.key"
GIT_DIR = "tribunal.git-dir"
GIT_COMMON_DIR = "tribunal.git-common-dir"
WRITABLE_ROLES = frozenset({"owner"})
PROXY_MOUNT = "/run/tribunal-proxy"  # where the proxy's socket folder is inside a container


@dataclass(frozen=True)
class DockerConfig:
    """How runner containers are made. `network_mode` "none" (the default): no network but the
    container's own loopback; the model APIs are reached through the credential proxy's socket,
    `proxy_socket_dir` on the host, mounted read-only at PROXY_MOUNT (container/proxy/).
    Tests of runner programs that talk to fakes on 127.0.0.1 themselves use "host"."""

    image: str = "tribunal-runner:latest"
    instance: str = "default"
    network_mode: str = "none"
    proxy_socket_dir: str | None = None
    mem_limit: str = "2g"
    memswap_limit: str | None = None  # None: same as mem_limit (no swap)
    nano_cpus: int = 1_000_000_000
    pids_limit: int = 256
    user: str = "1000:1000"
    read_only_rootfs: bool = True
    tmp_size: str = "512m"
    home: str = "/home/runner"
    home_size: str = "512m"
    # Extra bind mounts {host path: container path}, read-only (tests mount runner programs).
    extra_mounts: dict[str, str] = field(default_factory=dict)
    # Which containers go (the module's docstring); not part of the config hash.
    max_idle_s: float = 6 * 3600.0
    max_per_group: int = 6


@dataclass(frozen=True)
class Placement:
    """Which container a turn needs."""

    group: str
    role: str
    workspace: str | None
    git_dir: str | None = None  # the worktree's git metadata (RunSpec), mounted read-only
    git_common_dir: str | None = None

    @property
    def writable(self) -> bool:
        return self.role in WRITABLE_ROLES


Key = tuple[str, str, str]


@dataclass
class _Held:
    """A container this process holds for a key."""

    id: str
    config: str
    last_used: float
    busy: int = 0  # turns running in it


class ContainerPool:
    """`clock` (seconds, monotonic) dates the containers' last use: tests pass their own."""

    def __init__(
        self, client: Any, config: DockerConfig, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.config = config
        self.clock = clock
        self._lock = threading.Lock()
        self._held: dict[Key, _Held] = {}
        self._image_id: str | None = None
        self._podman: bool | None = None

    def key(self, placement: Placement) -> Key:
        """Which placements share a container: one per task workspace and role."""
        return (placement.group, placement.role, placement.workspace or "")

    def image_id(self) -> str:
        if self._image_id is None:
            self._image_id = str(self.client.images.get(self.config.image).id)
        return self._image_id

    def podman(self) -> bool:
        if self._podman is None:
            components = self.client.version().get("Components") or []
            self._podman = any("podman" in str(c.get("Name", "")).lower() for c in components)
        return self._podman

    def config_hash(self, placement: Placement) -> str:
        c = self.config
        parts = [
            self.image_id(), placement.workspace, placement.writable, c.network_mode,
            c.mem_limit, c.memswap_limit, c.nano_cpus, c.pids_limit, c.user, c.read_only_rootfs,
            c.tmp_size, c.home, c.home_size, sorted(c.extra_mounts.items()), list(IDLE_COMMAND),
            c.proxy_socket_dir, placement.git_dir, placement.git_common_dir,
        ]  # fmt: skip
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]

    def listed(self, *, all_instances: bool = False) -> list[Any]:
        labels = (
            [f"{MANAGED}=1"]
            if all_instances
            else [f"{MANAGED}=1", f"{INSTANCE}={self.config.instance}"]
        )
        return list(self.client.containers.list(all=True, filters={"label": labels}))

    def adopt(self) -> tuple[int, int]:
        """Apply the rule above to what this instance left on the engine: (reused, removed)."""
        reused = removed = 0
        with self._lock:
            self._held.clear()
            for container in self.listed():
                labels = container.labels or {}
                placement = _placement_of(labels)
                key = self.key(placement)
                keep = (
                    container.status == "running"
                    and key not in self._held
                    and labels.get(KEY) == _slot(self.config.instance, key)
                    and labels.get(CONFIG) == self.config_hash(placement)
                )
                if keep:
                    run_script(self.client.api, container.id, KILL_ALL)
                    self._held[key] = _Held(container.id, labels[CONFIG], self.clock())
                    reused += 1
                else:
                    _remove(container)
                    removed += 1
        return reused, removed

    def ensure(self, placement: Placement) -> str:
        """The id of a running container for this placement, created when needed, and counted
        as in use until `release(placement)`. Removes the containers the rule says go."""
        key = self.key(placement)
        wanted = self.config_hash(placement)
        with self._lock:
            held = self._held.get(key)
            # The backend runs one turn per key at a time, so nothing runs in one replaced here.
            # A held container is trusted to run without asking the engine each turn: one that
            # died is found when its exec cannot start, and the backend calls `discard`.
            if held and held.config != wanted:
                self._remove_id(held.id)
                del self._held[key]
                held = None
            self._retire(placement.group, keep=key)
            if held is None:
                held = _Held(self._create(placement, wanted), wanted, self.clock())
                self._held[key] = held
            held.busy += 1
            return held.id

    def discard(self, placement: Placement, container_id: str) -> bool:
        """After an exec failed to start in `container_id`: when the engine says it is not
        running (it died, or was removed), forget and remove it, and return True so the turn
        can ask `ensure` for a new one; False when it runs (the failure was something else)."""
        if self.running(container_id):
            return False
        with self._lock:
            key = self.key(placement)
            held = self._held.get(key)
            if held is not None and held.id == container_id:
                del self._held[key]
        log.info("runner container %s is gone; a new one is made", container_id[:12])
        self._remove_id(container_id)
        return True

    def release(self, placement: Placement) -> None:
        """A turn in the placement's container ended: it counts as used now."""
        with self._lock:
            held = self._held.get(self.key(placement))
            if held is not None:
                held.busy = max(0, held.busy - 1)
                held.last_used = self.clock()

    def held(self) -> dict[Key, str]:
        """The containers this process holds, by key (for tests and the bench)."""
        with self._lock:
            return {key: held.id for key, held in self._held.items()}

    def _retire(self, group: str, *, keep: Key) -> None:
        """Remove the idle-too-long containers, then the group's least recently used ones
        past the cap (counting the one about to be made). Called with the lock held."""
        now = self.clock()
        idle = [
            k
            for k, h in self._held.items()
            if not h.busy and now - h.last_used > self.config.max_idle_s
        ]
        victims = [k for k in idle if k != keep]
        mine = sorted(
            (k for k in self._held if k[0] == group and k != keep and k not in victims),
            key=lambda k: self._held[k].last_used,
        )
        excess = len(mine) + 1 - self.config.max_per_group  # +1: the one this turn uses
        for k in mine:
            if excess <= 0:
                break
            if not self._held[k].busy:
                victims.append(k)
                excess -= 1
        for k in victims:
            log.info("removing idle runner container for %s", "/".join(k))
            self._remove_id(self._held.pop(k).id)

    def running(self, container_id: str) -> bool:
        try:
            state = self.client.api.inspect_container(container_id)["State"]
        except Exception:
            return False
        return bool(state.get("Running"))

    def _create(self, placement: Placement, config_hash: str) -> str:
        c = self.config
        slot = _slot(c.instance, self.key(placement))
        labels = {
            MANAGED: "1", INSTANCE: c.instance, GROUP: placement.group, ROLE: placement.role,
            WORKSPACE_LABEL: placement.workspace or "", KEY: slot, CONFIG: config_hash,
            GIT_DIR: placement.git_dir or "", GIT_COMMON_DIR: placement.git_common_dir or "",
        }  # fmt: skip
        # A leftover for the same slot (another config, or a crash between create and record)
        # goes; it would also hold the name.
        same = [f"{MANAGED}=1", f"{INSTANCE}={c.instance}", f"{KEY}={slot}"]
        for old in self.client.containers.list(all=True, filters={"label": same}):
            _remove(old)
        git = git_mounts(placement.git_dir, placement.git_common_dir, podman=self.podman())
        volumes: dict[str, dict[str, str]] = {
            host: {"bind": inside, "mode": "ro"} for host, inside in c.extra_mounts.items()
        }
        volumes.update(git.volumes)
        if c.proxy_socket_dir:
            volumes[c.proxy_socket_dir] = {"bind": PROXY_MOUNT, "mode": "ro"}
        if placement.workspace:
            mode = "rw" if placement.writable else "ro"
            volumes[placement.workspace] = {"bind": WORKSPACE, "mode": mode}
        container = self.client.containers.run(
            c.image,
            list(IDLE_COMMAND),
            detach=True,
            init=True,  # reaps the runners' orphans; SIGTERM on stop is handled
            name=_name(c.instance, placement, slot),
            labels=labels,
            user=c.user,
            working_dir=WORKSPACE,
            environment={"HOME": c.home, **SAFE_WORKSPACE_ENV},
            volumes=volumes,
            # mode 1777 rather than uid=: Podman 4.3 rejects uid/gid tmpfs options. Podman applies
            # the mode only where the image has no such directory (see the Dockerfile).
            tmpfs={
                "/tmp": f"rw,size={c.tmp_size},mode=1777",
                c.home: f"rw,size={c.home_size},mode=1777",
                **git.tmpfs,
            },
            read_only=c.read_only_rootfs,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=c.mem_limit,
            memswap_limit=c.memswap_limit or c.mem_limit,
            nano_cpus=c.nano_cpus,
            pids_limit=c.pids_limit,
            network_mode=c.network_mode,
        )
        log.info(
            "created runner container %s for %s/%s", container.name, placement.group, placement.role
        )
        return str(container.id)

    def remove_all(self) -> int:
        """Remove every container of this instance (created or reused); returns how many."""
        with self._lock:
            self._held.clear()
            containers = self.listed()
            for container in containers:
                _remove(container)
            return len(containers)

    def _remove_id(self, container_id: str) -> None:
        try:
            _remove(self.client.containers.get(container_id))
        except Exception as exc:  # already gone
            log.debug("container %s not removed: %s", container_id, exc)


def _placement_of(labels: dict[str, str]) -> Placement:
    return Placement(
        labels.get(GROUP, ""),
        labels.get(ROLE, ""),
        labels.get(WORKSPACE_LABEL) or None,
        labels.get(GIT_DIR) or None,
        labels.get(GIT_COMMON_DIR) or None,
    )


def _slot(instance: str, key: Key) -> str:
    return hashlib.sha256("\0".join((instance, *key)).encode()).hexdigest()[:16]


def _remove(container: Any) -> None:
    try:
        container.remove(force=True)
    except Exception as exc:
        log.warning("could not remove container %s: %s", getattr(container, "name", "?"), exc)


def _name(instance: str, placement: Placement, slot: str) -> str:
    task = os.path.basename(placement.workspace or "")[:24]
    words = "-".join(w for w in (placement.group, placement.role, task) if w)
    slug = re.sub(r"[^a-zA-Z0-9_.-]+", "-", words)[:60].strip("-.")
    return f"tribunal-{re.sub(r'[^a-zA-Z0-9_.-]+', '-', instance)[:20]}-{slug}-{slot[:8]}"
