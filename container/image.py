"""Builds the runner image (container/Dockerfile) without any registry inside the build.

The build context is assembled on the host:
- `requirements.txt`: the runners' deps pinned to the versions installed here (pydantic,
  claude-agent-sdk, whose wheel bundles the Claude Code binary);
- `wheelhouse/`: their wheels for CPython 3.11 on x86_64 Linux, fetched once with `pip download`
  into a cache folder (`fetch_wheelhouse`);
- `codex`: the static musl Codex CLI from the npm package, installed once with `npm install` into a
  cache folder (`fetch_codex`), or taken from $CODEX_BIN;
- `runners/`: the source of the `runners` package.

The fetch steps need the package registries; the build itself does not (unless the base lacks git,
see the Dockerfile). An image is labelled with a content key (hash of everything that went in),
and `build_image` returns the existing image when the tag already carries the same key.

CLI: `tribunal image fetch` (the networked part) and `tribunal image build [--base BASE]
[--tag TAG]`; the same as `python -m container.image fetch|build ...`.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import runners.protocol

DEFAULT_BASE = "python:3.11-slim-bookworm"
DEFAULT_TAG = "tribunal-runner:latest"
CODEX_VERSION = "0.171.0"
PYTHON_VERSION = "3.11"
# Tags of the wheels the image can use (CPython 3.11, glibc x86_64).
WHEEL_PLATFORMS = ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_28_x86_64")
CONTENT_KEY_LABEL = "tribunal.content-key"
FETCH_COMMAND = "python -m container.image fetch"
DOCKERFILE = Path(__file__).with_name("Dockerfile")
# Runner deps and the range used when the package is not installed on the host.
RUNNER_DEPS = {"pydantic": ">=2.10,<3", "claude-agent-sdk": ">=0.2.189,<0.3"}


class ImageError(RuntimeError):
    """The image could not be built; the message says what is missing or what failed."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tribunal"


def runner_requirements() -> str:
    """The runners' deps, pinned to the host's versions so host and image agree."""
    lines = []
    for name, fallback in RUNNER_DEPS.items():
        try:
            lines.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            lines.append(f"{name}{fallback}")
    return "\n".join(lines) + "\n"


def wheelhouse_dir(cache_dir: Path | None, requirements: str) -> Path:
    """The cache folder of the wheels for `requirements`, keyed by their text."""
    key = hashlib.sha256(f"{PYTHON_VERSION}\n{requirements}".encode()).hexdigest()[:16]
    return (cache_dir or cache_root()) / f"wheelhouse-{key}"


def fetch_wheelhouse(cache_dir: Path | None = None, requirements: str | None = None) -> Path:
    """Wheels for `requirements` (and pip itself) in a cache folder keyed by their text."""
    requirements = requirements or runner_requirements()
    target = wheelhouse_dir(cache_dir, requirements)
    if (target / ".complete").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    (target / "requirements.txt").write_text(requirements)
    platforms = [arg for p in WHEEL_PLATFORMS for arg in ("--platform", p)]
    cmd = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--only-binary=:all:", *platforms, "--python-version", PYTHON_VERSION,
        "--implementation", "cp", "--dest", str(target),
        "-r", str(target / "requirements.txt"), "pip",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ImageError(f"pip download failed: {done.stderr.strip()[-2000:]}")
    (target / ".complete").write_text(requirements)
    return target


def find_codex(cache_dir: Path | None = None) -> Path | None:
    """The Codex binary: $CODEX_BIN, else the one `fetch_codex` (or tests/fakes/install_codex.sh)
    put in the cache folder."""
    if env := os.environ.get("CODEX_BIN"):
        return Path(env) if Path(env).is_file() else None
    modules = (cache_dir or cache_root()) / f"codex-{CODEX_VERSION}" / "node_modules"
    found = sorted(p for p in modules.glob("**/vendor/*musl*/**/codex") if p.is_file())
    return found[0] if found else None


def fetch_codex(cache_dir: Path | None = None) -> Path:
    """npm install of the pinned Codex CLI into the cache folder, when not there yet."""
    if found := find_codex(cache_dir):
        return found
    if shutil.which("npm") is None:
        raise ImageError("npm is needed to fetch the Codex CLI (or set CODEX_BIN)")
    prefix = (cache_dir or cache_root()) / f"codex-{CODEX_VERSION}"
    prefix.mkdir(parents=True, exist_ok=True)
    cmd = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
           "--loglevel=error", f"@openai/codex@{CODEX_VERSION}"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ImageError(f"npm install of the Codex CLI failed: {done.stderr.strip()[-2000:]}")
    if found := find_codex(cache_dir):
        return found
    raise ImageError(f"no static codex binary under {prefix} after npm install")


@dataclass(frozen=True)
class ContextInputs:
    """What goes into the build context besides the Dockerfile."""

    wheelhouse: Path
    codex: Path
    runners_dir: Path
    requirements: str


def default_inputs(cache_dir: Path | None = None, *, fetch: bool = False) -> ContextInputs:
    """Inputs from the cache folder; `fetch=True` downloads what is missing (registries)."""
    requirements = runner_requirements()
    if fetch:
        wheelhouse, codex = fetch_wheelhouse(cache_dir, requirements), fetch_codex(cache_dir)
    else:
        wheelhouse = wheelhouse_dir(cache_dir, requirements)
        if not (wheelhouse / ".complete").exists():
            raise ImageError(f"no wheelhouse at {wheelhouse}: run `{FETCH_COMMAND}`")
        found = find_codex(cache_dir)
        if found is None:
            raise ImageError(f"no Codex binary: run `{FETCH_COMMAND}` or set CODEX_BIN")
        codex = found
    runners_dir = Path(runners.protocol.__file__).parent
    return ContextInputs(wheelhouse, codex, runners_dir, requirements)


def _context_files(inputs: ContextInputs) -> Iterator[tuple[str, Path]]:
    """(path in the context, source file), in a stable order."""
    yield "codex", inputs.codex
    for wheel in sorted(inputs.wheelhouse.glob("*.whl")):
        yield f"wheelhouse/{wheel.name}", wheel
    for source in sorted(inputs.runners_dir.rglob("*.py")):
        if "__pycache__" not in source.parts:
            yield f"runners/{source.relative_to(inputs.runners_dir).as_posix()}", source


def assemble_context(dest: Path, inputs: ContextInputs) -> None:
    """Lay the context out in `dest` (hard links where possible: the inputs are ~800 MB)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(DOCKERFILE, dest / "Dockerfile")
    (dest / "requirements.txt").write_text(inputs.requirements)
    for name, source in _context_files(inputs):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
    (dest / "codex").chmod(0o755)


def content_key(inputs: ContextInputs, base_id: str, build_args: dict[str, str]) -> str:
    """A hash of everything the image is made of: changing any input changes the key."""
    digest = hashlib.sha256()
    digest.update(DOCKERFILE.read_bytes())
    digest.update(json.dumps([base_id, build_args, inputs.requirements]).encode())
    for name, source in _context_files(inputs):
        digest.update(name.encode() + b"\0")
        with source.open("rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()[:32]


def build_image(
    client: Any,
    *,
    tag: str = DEFAULT_TAG,
    base: str = DEFAULT_BASE,
    context_dir: str | None = None,
    inputs: ContextInputs | None = None,
    reuse: bool = True,
    log: Any = None,
) -> str:
    """Build the runner image FROM `base` and tag it `tag`; return the image id.

    `client` is a docker.DockerClient. With `reuse`, an image already tagged `tag` whose content
    key matches is returned without building. `context_dir` keeps the assembled context there
    (else a temporary folder is used and removed). `log(line)` receives the build output.
    """
    from docker.errors import BuildError, ImageNotFound

    inputs = inputs or default_inputs()
    base_is_local = True
    try:
        base_id = str(client.images.get(base).id)
    except ImageNotFound:
        base_id = base  # pulled by the build (a registry image for normal users)
        base_is_local = False
    build_args = {"BASE": base}
    key = content_key(inputs, base_id, build_args)
    previous: str | None = None
    try:
        existing = client.images.get(tag)
        previous = str(existing.id)
        if reuse and (existing.labels or {}).get(CONTENT_KEY_LABEL) == key:
            return previous
    except ImageNotFound:
        pass
    with tempfile.TemporaryDirectory(prefix="tribunal-image-") as tmp:
        context = Path(context_dir) if context_dir else Path(tmp)
        assemble_context(context, inputs)
        try:
            image, output = client.images.build(
                path=str(context),
                tag=tag,
                buildargs=build_args,
                labels={CONTENT_KEY_LABEL: key},
                rm=True,
                forcerm=True,
            )
        except BuildError as exc:
            lines = "".join(_stream_text(exc.build_log))[-3000:]
            hint = "" if base_is_local else "\n" + missing_base_hint(base)
            raise ImageError(f"image build failed: {exc.msg}\n{lines}{hint}") from exc
        if log is not None:
            for line in _stream_text(output):
                log(line)
    if previous and previous != image.id:
        # The image this tag named before is untagged now; drop it unless something uses it.
        with contextlib.suppress(Exception):
            client.images.remove(previous)
    return str(image.id)


def missing_base_hint(base: str) -> str:
    """What to do when the base is not on the engine and the build could not pull it (a machine
    without access to the registry): a base that is there already."""
    return (
        f"The base image {base} is not on the engine and could not be pulled (no access to its "
        "registry?). Build from an image the engine has: `tribunal image build --base IMAGE`, "
        "where IMAGE is any local image with Python 3.11 (see `podman images` or `docker "
        "images`; e.g. a debootstrap rootfs imported with `podman import`), or pull the base "
        "once on a machine that can."
    )


def _stream_text(chunks: Iterable[dict[str, Any]]) -> Iterator[str]:
    for chunk in chunks:
        if text := chunk.get("stream") or chunk.get("error"):
            yield str(text)


def add_image_command(sub: Any, build_handler: Any = None) -> None:
    """Register `image build` and `image fetch` on an argparse subparsers object. bot/cli.py
    passes its own `build_handler`, which picks the engine the bot uses (and the base: None
    when `--base` is not given)."""
    image = sub.add_parser("image", help="build the runner image (container/Dockerfile)")
    actions = image.add_subparsers(dest="image_command", metavar="ACTION", required=True)
    fetch = actions.add_parser("fetch", help="download the wheelhouse and the Codex CLI")
    fetch.set_defaults(handler=_fetch_command)
    if build_handler is None:
        where, base_default, base_help = "the DOCKER_HOST engine", DEFAULT_BASE, DEFAULT_BASE
    else:
        where, base_default = "the engine the bot uses", None
        base_help = f"{DEFAULT_BASE}, or the debootstrap base on the bot's own engine"
    build = actions.add_parser("build", help=f"build the runner image on {where}")
    build.add_argument("--base", default=base_default, help=f"base image (default {base_help})")
    build.add_argument("--tag", default=DEFAULT_TAG, help=f"image tag (default {DEFAULT_TAG})")
    build.add_argument("--context-dir", default=None, help="keep the build context here")
    build.set_defaults(handler=build_handler or _build_command)


def _fetch_command(args: argparse.Namespace) -> int:
    try:
        inputs = default_inputs(fetch=True)
    except ImageError as exc:
        print(f"tribunal image: {exc}", file=sys.stderr)
        return 1
    print(f"wheelhouse {inputs.wheelhouse}\ncodex {inputs.codex}")
    return 0


def _build_command(args: argparse.Namespace) -> int:
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env(timeout=1800)
        image_id = build_image(
            client,
            tag=args.tag,
            base=args.base,
            context_dir=args.context_dir,
            inputs=default_inputs(fetch=True),
            log=lambda line: print(line, end=""),
        )
    except (ImageError, DockerException) as exc:
        print(f"tribunal image: {exc}", file=sys.stderr)
        return 1
    print(f"built {args.tag} ({image_id})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m container")
    add_image_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main(["image", *sys.argv[1:]]))
