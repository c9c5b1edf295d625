"""The registry-free base image: a debootstrap minbase rootfs of Debian with Python and git.

The runner image (container/image.py) is built FROM an image the engine has; a machine that
reaches Debian's mirror but no container registry gets one this way (as root: debootstrap needs
it). The tag is a hash of what goes into the rootfs, so a present image is reused and a changed
recipe makes a new one. Podman's `import_image` ignores its `tag` (notes §9): the image is
imported, then tagged by the id it answers.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docker.errors import DockerException, ImageNotFound

# What goes into the base image; the tag is a hash of this, so changing it makes a new image.
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "git", "ca-certificates", "procps")
BASE_FORMAT = "v1"  # bump to force a rebuild when the recipe below changes
BASE_REPOSITORY = "localhost/tribunal-base"


class BaseImageError(RuntimeError):
    """The base image could not be made; the message says what is missing or what failed."""


def base_image_tag(repository: str = BASE_REPOSITORY) -> str:
    key = hashlib.sha256(repr((BASE_SUITE, BASE_PACKAGES, BASE_FORMAT)).encode()).hexdigest()
    return f"{repository}:{key[:16]}"


def ensure_base_image(
    client: Any, *, repository: str | None = None, log: Callable[[str], None] | None = None
) -> str:
    """The debootstrap base image's tag; built (~35 s, needs the Debian mirror) when absent."""
    repository = repository or BASE_REPOSITORY
    tag = base_image_tag(repository)
    try:
        client.images.get(tag)
        return tag
    except ImageNotFound:
        pass
    if shutil.which("debootstrap") is None:
        raise BaseImageError("debootstrap is not installed: apt-get install debootstrap")
    if log is not None:
        log(f"building the base image {tag} with debootstrap ({BASE_SUITE}; about a minute)")
    with tempfile.TemporaryDirectory(prefix="tribunal-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        cmd = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(BASE_PACKAGES)}",
            BASE_SUITE,
            str(rootfs),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise BaseImageError(f"debootstrap failed ({done.returncode}): {done.stdout[-2000:]}")
        # Caches apt fetched would only bloat the image.
        shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
        tarball = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        # import_image ignores `tag` on Podman (notes §9): import, then tag the id it answers.
        answer = client.api.import_image(src=str(tarball), repository=repository)
        image_id = _imported_id(answer)
    client.images.get(image_id).tag(repository, tag.partition(":")[2])
    # The import also tagged it :latest; drop that name (the image keeps its versioned tag).
    with contextlib.suppress(DockerException):
        client.images.remove(f"{repository}:latest")
    return tag


def _imported_id(answer: object) -> str:
    """The image id in import_image's answer (a JSON stream whose last status is the id)."""
    import json

    text = answer.decode() if isinstance(answer, bytes) else str(answer)
    image_id = ""
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        status = data.get("status") or data.get("stream") or data.get("id") or ""
        if status.strip():
            image_id = status.strip()
    if not image_id:
        raise BaseImageError(f"import_image gave no image id: {text[:500]}")
    return image_id
