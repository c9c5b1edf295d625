"""The long-lived runner containers: one per (group, role), created on first use, labelled.

Labels: `tribunal.managed=1`, `tribunal.instance` (which bot deployment), `tribunal.group`,
`tribunal.role`, and `tribunal.config` (a hash of everything the container was created with:
image id, workspace, mount mode, limits, network, user).

The rule for containers found on the engine (at start, and when a turn needs a container):
- same instance, same group/role and same config hash, and running: reused (a bot restart keeps
  the agents' HOME, so their sessions can resume); any runner processes still recorded in it
  are killed first (a turn interrupted by the crash must not keep writing);
- same instance, anything else (another config, stopped, a duplicate): removed;
- another instance: left alone (another bot sharing the engine). Give every deployment its own
  stable instance id; the default is "default".

All methods are blocking (docker SDK); the backend calls them through asyncio.to_thread.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from container.docker_exec import IDLE_COMMAND, KILL_ALL, run_script

log = logging.getLogger(__name__)

MANAGED = "tribunal.managed"
INSTANCE = "tribunal.instance"
GROUP = "tribunal.group"
ROLE = "tribunal.role"
CONFIG = "tribunal.config"
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


@dataclass(frozen=True)
class Placement:
    """Which container a turn needs."""

    group: str
    role: str
    workspace: str | None

    @property
    def writable(self) -> bool:
        return self.role in WRITABLE_ROLES


class ContainerPool:
    def __init__(self, client: Any, config: DockerConfig) -> None:
        self.client = client
        self.config = config
        self._lock = threading.Lock()
        self._known: dict[tuple[str, str], tuple[str, str]] = {}  # key → (id, config hash)
        self._image_id: str | None = None

    def image_id(self) -> str:
        if self._image_id is None:
            self._image_id = str(self.client.images.get(self.config.image).id)
        return self._image_id

    def config_hash(self, placement: Placement) -> str:
        c = self.config
        parts = [
            self.image_id(), placement.workspace, placement.writable, c.network_mode,
            c.mem_limit, c.memswap_limit, c.nano_cpus, c.pids_limit, c.user, c.read_only_rootfs,
            c.tmp_size, c.home, c.home_size, sorted(c.extra_mounts.items()), list(IDLE_COMMAND),
            c.proxy_socket_dir,
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
            self._known.clear()
            for container in self.listed():
                labels = container.labels or {}
                key = (labels.get(GROUP, ""), labels.get(ROLE, ""))
                keep = (
                    container.status == "running"
                    and key not in self._known
                    and labels.get(CONFIG) == self._hash_for_labels(labels)
                )
                if keep:
                    run_script(self.client.api, container.id, KILL_ALL)
                    self._known[key] = (container.id, labels[CONFIG])
                    reused += 1
                else:
                    _remove(container)
                    removed += 1
        return reused, removed

    def _hash_for_labels(self, labels: dict[str, str]) -> str:
        workspace = labels.get("tribunal.workspace") or None
        return self.config_hash(Placement(labels.get(GROUP, ""), labels.get(ROLE, ""), workspace))

    def ensure(self, placement: Placement) -> str:
        """The id of a running container for this placement; created when needed."""
        key = (placement.group, placement.role)
        wanted = self.config_hash(placement)
        with self._lock:
            known = self._known.get(key)
            if known and known[1] == wanted and self._running(known[0]):
                return known[0]
            if known:
                self._remove_id(known[0])
                del self._known[key]
            container_id = self._create(placement, wanted)
            self._known[key] = (container_id, wanted)
            return container_id

    def _running(self, container_id: str) -> bool:
        try:
            state = self.client.api.inspect_container(container_id)["State"]
        except Exception:
            return False
        return bool(state.get("Running"))

    def _create(self, placement: Placement, config_hash: str) -> str:
        c = self.config
        labels = {
            MANAGED: "1", INSTANCE: c.instance, GROUP: placement.group, ROLE: placement.role,
            CONFIG: config_hash, "tribunal.workspace": placement.workspace or "",
        }  # fmt: skip
        # A leftover for the same group/role (another config, or a crash between create and
        # record) goes; it would also hold the name.
        same = [f"{k}={labels[k]}" for k in (MANAGED, INSTANCE, GROUP, ROLE)]
        for old in self.client.containers.list(all=True, filters={"label": same}):
            _remove(old)
        volumes: dict[str, dict[str, str]] = {
            host: {"bind": inside, "mode": "ro"} for host, inside in c.extra_mounts.items()
        }
        if c.proxy_socket_dir:
            volumes[c.proxy_socket_dir] = {"bind": PROXY_MOUNT, "mode": "ro"}
        if placement.workspace:
            mode = "rw" if placement.writable else "ro"
            volumes[placement.workspace] = {"bind": "/workspace", "mode": mode}
        container = self.client.containers.run(
            c.image,
            list(IDLE_COMMAND),
            detach=True,
            init=True,  # reaps the runners' orphans; SIGTERM on stop is handled
            name=_name(c.instance, placement),
            labels=labels,
            user=c.user,
            working_dir="/workspace",
            environment={"HOME": c.home},
            volumes=volumes,
            # mode 1777 rather than uid=: Podman 4.3 rejects uid/gid tmpfs options. Podman applies
            # the mode only where the image has no such directory (see the Dockerfile).
            tmpfs={
                "/tmp": f"rw,size={c.tmp_size},mode=1777",
                c.home: f"rw,size={c.home_size},mode=1777",
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
            self._known.clear()
            containers = self.listed()
            for container in containers:
                _remove(container)
            return len(containers)

    def _remove_id(self, container_id: str) -> None:
        try:
            _remove(self.client.containers.get(container_id))
        except Exception as exc:  # already gone
            log.debug("container %s not removed: %s", container_id, exc)


def _remove(container: Any) -> None:
    try:
        container.remove(force=True)
    except Exception as exc:
        log.warning("could not remove container %s: %s", getattr(container, "name", "?"), exc)


def _name(instance: str, placement: Placement) -> str:
    slug = re.sub(r"[^a-zA-Z0-9_.-]+", "-", f"{placement.group}-{placement.role}")[:40].strip("-.")
    digest = hashlib.sha256(f"{instance}\0{placement.group}\0{placement.role}".encode()).hexdigest()
    return f"tribunal-{re.sub(r'[^a-zA-Z0-9_.-]+', '-', instance)[:20]}-{slug}-{digest[:8]}"
