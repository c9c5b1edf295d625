"""`tribunal doctor` with several engines (`[docker] engines`): one line per engine, and one for
the set.

Each engine: it answers (name, version, API version), it holds the runner image, and one
throwaway container of that image runs there and sees this bot's data folder at the same path
(a file the doctor writes there, mounted read-only, found inside): the task worktrees are in
that folder and are bind-mounted by path, so an engine on a host that does not share it would
run its turns on an empty folder (README "Running at scale"). An engine that fails a check is
not required: the bot drains it and runs the turns on the others (container/engine_set.py).
The set's line is required with `backend = "docker"`: at least one engine must be usable.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from bot.backend import engine_endpoints, probe_endpoint, short_reason
from bot.doctor.check import Check
from bot.settings import Settings
from container.endpoints import Endpoint

LABEL = "tribunal.doctor"
RUN_TIMEOUT_S = 120
MOUNT = "/tribunal-doctor-data"


def check_engines(settings: Settings) -> Iterator[Check]:
    checks = [check_one(settings, endpoint) for endpoint in engine_endpoints(settings)]
    yield from checks
    usable = sum(c.ok for c in checks)
    required = settings.backend == "docker"
    if usable:
        others = len(checks) - usable
        drained = f"; the {others} other(s) are drained" if others else ""
        yield Check("engines", True, f"ok ({usable} of {len(checks)} usable{drained})", required)
    else:
        yield Check("engines", False, f"none of the {len(checks)} engines is usable", required)


def check_one(settings: Settings, endpoint: Endpoint) -> Check:
    name = f"engine {endpoint.name}"
    image = settings.docker.image
    probe = probe_endpoint(endpoint, endpoint.name, image, name=True)
    if not probe.reachable:
        return Check(name, False, f"not reachable ({probe.error}): drained", required=False)
    if probe.image_id is None:
        return Check(
            name,
            False,
            f"answers, but has no image {image} ({probe.image_error}): build or load it there "
            f"(`tribunal image build` puts it on every engine); drained until then",
            required=False,
        )
    data = settings.data.resolve()
    unseen = sees_folder(endpoint, image, data)
    if unseen is not None:
        return Check(name, False, f"{unseen}; drained", required=False)
    what = f"{probe.engine}, " if probe.engine else ""
    return Check(
        name,
        True,
        f"ok ({what}API {probe.api_version}, image {probe.image_id[:19]}; a container ran "
        f"and saw {data})",
        required=False,
    )


def sees_folder(endpoint: Endpoint, image: str, folder: Path) -> str | None:
    """None when a container of `image` on the engine sees `folder` (a file written there now
    is found through a read-only bind mount of that path), else why not. Blocking."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    mark = folder / f".doctor-{uuid.uuid4().hex[:12]}"
    mark.write_text("written by tribunal doctor\n")
    try:
        client = endpoint.connect(timeout=RUN_TIMEOUT_S)
    except Exception as exc:
        mark.unlink(missing_ok=True)
        return f"stopped answering: {short_reason(exc)}"
    try:
        client.containers.run(
            image,
            ["sh", "-c", 'test -f "$1"', "sh", f"{MOUNT}/{mark.name}"],
            volumes={str(folder): {"bind": MOUNT, "mode": "ro"}},
            user=f"{os.getuid()}:{os.getgid()}",  # the data folder is this user's, mode 0700
            network_mode="none",
            cap_drop=["ALL"],
            read_only=True,
            labels={LABEL: "1"},
            remove=True,
        )
        return None
    except Exception as exc:
        from docker.errors import ContainerError

        if isinstance(exc, ContainerError):
            return (
                f"runs containers, but they do not see {folder} (the data folder, where the "
                f"task worktrees are): it must be at the same path on the engine's host"
            )
        return f"answers, but a container did not run: {short_reason(exc)}"
    finally:
        mark.unlink(missing_ok=True)
        with contextlib.suppress(Exception):
            client.close()
