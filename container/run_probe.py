"""Can this engine run a container at all? One cheap probe, before anything slow is built.

An engine that answers its API may still be unable to run a container: a machine without
nesting (the runtime may not mount /proc) or without fuse (no overlay storage) fails only when a
container starts, which without this probe is minutes into building the runner image
(issue 27 #4). No registry is needed: the probe imports an empty image (a tarball of one folder,
~0.1 s) and starts a container of it whose program does not exist. The runtime looks for the
program last, after it made the namespaces, the mounts and the cgroup, so "the program was not
found" is the answer of a runtime that can run containers, and any other error is the reason it
cannot. The probe's container and image are removed again either way.
"""

from __future__ import annotations

import contextlib
import io
import re
import tarfile
import uuid
from typing import Any

PROBE_REPOSITORY = "localhost/tribunal-run-probe"
PROBE_PROGRAM = "/tribunal-run-probe"
LABEL = "tribunal.probe"
_NOT_FOUND = ("not found", "no such file or directory")
MAX_REASON = 300


def _empty_image_tar(nonce: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        # A folder named by the nonce: each probe's image is its own (another probe's cleanup,
        # e.g. a doctor run beside the bot, never removes it under this one).
        folder = tarfile.TarInfo(f"probe-{nonce}")
        folder.type = tarfile.DIRTYPE
        folder.mode = 0o1777
        tar.addfile(folder)
    return buffer.getvalue()


def cannot_run(client: Any) -> str | None:
    """None when the engine of `client` (a docker.DockerClient) runs containers, else the
    engine's reason in one line. Blocking; never raises."""
    nonce = uuid.uuid4().hex[:12]
    repository = f"{PROBE_REPOSITORY}-{nonce}"
    image = f"{repository}:latest"  # Podman ignores an import's tag (notes §9)
    container = None
    try:
        client.api.import_image_from_data(_empty_image_tar(nonce), repository=repository)
        container = client.containers.create(
            image, [PROBE_PROGRAM], network_mode="none", labels={LABEL: "1"}
        )
        container.start()
        return None  # started: cannot happen with no program, but it does run containers
    except Exception as exc:
        text = _explanation(exc)
        lower = text.lower()
        if PROBE_PROGRAM in text and any(words in lower for words in _NOT_FOUND):
            return None
        return one_line(text)
    finally:
        if container is not None:
            with contextlib.suppress(Exception):
                container.remove(force=True)
        with contextlib.suppress(Exception):
            client.images.remove(image)


def _explanation(exc: BaseException) -> str:
    # An APIError's explanation is the engine's own message; str() adds the HTTP status.
    explanation = getattr(exc, "explanation", None)
    return str(explanation or exc)


def one_line(text: str) -> str:
    """The engine's message on one line, bounded (a runtime's error can be a long dump)."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 1] + "…"
