"""The runner image on every engine of `[docker] engines` (README "Running at scale").

Built once, on the first engine that answers, then copied to the others with the Docker API's
own save and load (`GET /images/{name}/get`, `POST /images/load`): the archive is saved once
into a spool file on this host and loaded into each engine that lacks it. Copy or build on each
engine? Measured on Podman (tests/bench/bench_image_spread.py, the 1.3 GB image onto an engine
with empty storage): the copy takes 1.2x less time than a build that needs the base brought
first, and 1.15x more than a build where the base is there already: close either way. Copying
was chosen for what else it gives: the engine needs nothing for it (a build needs the base
there, which a machine without a registry has only where it was made, the debootstrap base, and
the build inputs sent to every engine), and every engine holds the same image, by id, so the
doctor's per-engine ids agree. An engine that already holds the image with the same content key
(container/image.py, a label the archive keeps) is left alone.

An engine that does not answer, or fails while the image is copied, is skipped and reported;
the others still get the image. The caller (bot/image_command.py) prints one line per engine
and exits non-zero naming the engines that lack the image.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from container.endpoints import Endpoint, answers
from container.image import CONTENT_KEY_LABEL

CHUNK = 1 << 20  # bytes per read of the spool file while it is sent to an engine
PING_TIMEOUT_S = 5

# Outcomes of one engine, as the per-engine line says them.
BUILT, UP_TO_DATE, LOADED, PRESENT, FAILED = "built", "up to date", "loaded", "present", "failed"


@dataclass(frozen=True)
class Outcome:
    """What happened on one engine."""

    engine: str
    action: str  # one of the words above
    detail: str  # its line, after the engine's name

    @property
    def ok(self) -> bool:
        return self.action != FAILED

    @property
    def line(self) -> str:
        return f"engine {self.engine}: {self.detail}"


# build(client) -> image id; raises ImageError (the inputs: no other engine would do better) or
# the docker SDK's errors (this engine failed: the next one is tried).
Build = Callable[[Any], str]
# probe(endpoint) -> None when it answers, else why not in a few words; never raises.
Probe = Callable[[Endpoint], "str | None"]


def _ping(endpoint: Endpoint) -> str | None:
    return answers(endpoint, None, PING_TIMEOUT_S)


def spread_image(
    endpoints: Sequence[Endpoint],
    tag: str,
    build: Build,
    *,
    connect_timeout_s: int = 1800,
    say: Callable[[str], None] = lambda line: None,
    probe: Probe = _ping,
    spool_dir: str | None = None,
) -> list[Outcome]:
    """Build `tag` on the first engine that answers (the next one if that one fails as an
    engine) and copy it to every other engine that lacks it; one Outcome per endpoint, in
    their order. `say(line)` hears each outcome as it happens. ImageError from `build`
    propagates (after the down engines were said)."""
    from docker.errors import DockerException

    outcomes: dict[str, Outcome] = {}
    live: list[Endpoint] = []
    for endpoint in endpoints:
        why = probe(endpoint)
        if why is None:
            live.append(endpoint)
        else:
            outcome = Outcome(endpoint.name, FAILED, f"not reachable ({why}): skipped")
            _note(outcomes, say, outcome)

    source: Endpoint | None = None
    source_id = ""
    for endpoint in live:
        started = time.monotonic()
        try:
            with _client(endpoint, connect_timeout_s) as client:
                before = _image_id(client, tag)
                source_id = build(client)
        except DockerException as exc:
            _note(outcomes, say, Outcome(endpoint.name, FAILED, f"the build failed: {_short(exc)}"))
            continue
        took = time.monotonic() - started
        what = f"{tag} ({_short_id(source_id)})"
        if before == source_id:
            outcome = Outcome(endpoint.name, UP_TO_DATE, f"{what} is up to date: nothing to build")
        else:
            outcome = Outcome(endpoint.name, BUILT, f"built {what} in {took:.1f} s")
        _note(outcomes, say, outcome)
        source = endpoint
        break

    if source is not None:
        targets = [e for e in live if e.name not in outcomes]
        with tempfile.TemporaryDirectory(prefix="tribunal-image-", dir=spool_dir) as tmp:
            spool = _Spool(source, tag, source_id, Path(tmp) / "image.tar", connect_timeout_s)
            for endpoint in targets:
                _note(outcomes, say, _copy_to(endpoint, spool, connect_timeout_s))
    return [outcomes[e.name] for e in endpoints]


class _Spool:
    """The source engine's archive of the image, saved on first use only."""

    def __init__(self, source: Endpoint, tag: str, image_id: str, path: Path, timeout: int):
        self.source, self.tag, self.image_id, self.path = source, tag, image_id, path
        self.timeout = timeout
        self.key: str | None = None
        self.saved_s: float | None = None

    def read_key(self) -> str | None:
        if self.key is None:
            with _client(self.source, self.timeout) as client:
                labels = client.images.get(self.image_id).labels or {}
            self.key = labels.get(CONTENT_KEY_LABEL) or ""
        return self.key or None

    def archive(self) -> Path:
        if self.saved_s is None:
            started = time.monotonic()
            with _client(self.source, self.timeout) as client, self.path.open("wb") as out:
                for chunk in client.images.get(self.tag).save(named=True):
                    out.write(chunk)
            self.saved_s = time.monotonic() - started
        return self.path


def _copy_to(endpoint: Endpoint, spool: _Spool, timeout: int) -> Outcome:
    from docker.errors import DockerException

    tag = spool.tag
    try:
        with _client(endpoint, timeout) as client:
            held = _image(client, tag)
            key = spool.read_key()
            if held is not None and key and (held.labels or {}).get(CONTENT_KEY_LABEL) == key:
                what = f"has {tag} already ({_short_id(held.id)}, the same content key)"
                return Outcome(endpoint.name, PRESENT, what)
            archive = spool.archive()
            started = time.monotonic()
            with archive.open("rb") as data:
                client.images.load(_chunks(data))
            took = time.monotonic() - started
            loaded = _image(client, spool.image_id)
            if loaded is None:
                return Outcome(endpoint.name, FAILED, f"the load did not leave {tag} there")
            repository, _, version = tag.rpartition(":")
            if "/" in version or not repository:  # no version given: `latest`
                repository, version = tag, "latest"
            loaded.tag(repository, version)  # whatever name the archive carried
            if held is not None and held.id != loaded.id:
                with contextlib.suppress(Exception):  # untagged now; kept if something uses it
                    client.images.remove(held.id)
    except (DockerException, OSError) as exc:
        return Outcome(endpoint.name, FAILED, f"the copy failed: {_short(exc)}")
    size = archive.stat().st_size / 1e9
    return Outcome(
        endpoint.name,
        LOADED,
        f"loaded {tag} ({_short_id(spool.image_id)}) from {spool.source.name}: {size:.2f} GB, "
        f"saved in {spool.saved_s or 0.0:.1f} s, loaded in {took:.1f} s",
    )


def _chunks(data: Any) -> Iterator[bytes]:
    while chunk := data.read(CHUNK):
        yield chunk


@contextlib.contextmanager
def _client(endpoint: Endpoint, timeout: int) -> Iterator[Any]:
    client = endpoint.connect(timeout=timeout)
    try:
        yield client
    finally:
        client.close()


def _image(client: Any, name: str) -> Any:
    from docker.errors import ImageNotFound

    try:
        return client.images.get(name)
    except ImageNotFound:
        return None


def _image_id(client: Any, name: str) -> str | None:
    image = _image(client, name)
    return None if image is None else str(image.id)


def _note(outcomes: dict[str, Outcome], say: Callable[[str], None], outcome: Outcome) -> None:
    outcomes[outcome.engine] = outcome
    say(outcome.line)


def _short_id(image_id: str) -> str:
    return image_id[:19]  # "sha256:" and 12 hex digits, as `docker images` shows them


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__
