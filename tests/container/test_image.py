"""The runner image: context assembly and content keys (no engine), and the built image on the
engine (user, tools, packages, reuse by content key, a clear error for an unusable base)."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from container.image import (
    CONTENT_KEY_LABEL,
    FETCH_COMMAND,
    ContextInputs,
    ImageError,
    assemble_context,
    build_image,
    content_key,
    default_inputs,
    runner_requirements,
)
from tests.fakes.required import unavailable


def _inputs(tmp_path: Path) -> ContextInputs:
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    (wheelhouse / "demo-1.0-py3-none-any.whl").write_bytes(b"wheel")
    codex = tmp_path / "codex-bin"
    codex.write_bytes(b"\x7fELF codex")
    runners_dir = tmp_path / "runners"
    (runners_dir / "__pycache__").mkdir(parents=True)
    (runners_dir / "__init__.py").write_text("")
    (runners_dir / "protocol.py").write_text("X = 1\n")
    (runners_dir / "__pycache__" / "protocol.cpython-311.pyc").write_bytes(b"junk")
    return ContextInputs(wheelhouse, codex, runners_dir, "pydantic==2.0\n")


def test_context_holds_what_the_dockerfile_copies(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path)
    context = tmp_path / "context"
    assemble_context(context, inputs)
    files = sorted(p.relative_to(context).as_posix() for p in context.rglob("*") if p.is_file())
    assert files == [
        "Dockerfile",
        "codex",
        "requirements.txt",
        "runners/__init__.py",
        "runners/protocol.py",
        "wheelhouse/demo-1.0-py3-none-any.whl",
    ]
    assert (context / "codex").stat().st_mode & 0o111
    assert (context / "requirements.txt").read_text() == "pydantic==2.0\n"


def test_content_key_follows_every_input(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path)
    key = content_key(inputs, "sha256:base", {"BASE": "b"})
    assert key == content_key(inputs, "sha256:base", {"BASE": "b"})
    assert key != content_key(inputs, "sha256:other", {"BASE": "b"})
    assert key != content_key(inputs, "sha256:base", {"BASE": "c"})
    (inputs.runners_dir / "protocol.py").write_text("X = 2\n")
    assert key != content_key(inputs, "sha256:base", {"BASE": "b"})


def test_requirements_pin_the_host_versions() -> None:
    from importlib import metadata

    lines = runner_requirements().splitlines()
    assert f"pydantic=={metadata.version('pydantic')}" in lines
    assert f"claude-agent-sdk=={metadata.version('claude-agent-sdk')}" in lines


def test_missing_cache_says_how_to_fill_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEX_BIN", raising=False)
    with pytest.raises(ImageError, match=FETCH_COMMAND):
        default_inputs(tmp_path / "empty-cache")


@pytest.mark.engine
@pytest.mark.timeout(300)
def test_built_image_has_the_runners_the_tools_and_a_non_root_user(
    docker_client: Any, runner_image: str, base_image: str
) -> None:
    image = docker_client.images.get(runner_image)
    assert image.labels.get(CONTENT_KEY_LABEL)
    script = (
        "id -u; id -g; codex --version; git --version; "
        "python3 -c 'import runners.protocol, claude_agent_sdk, pydantic; print(\"imports ok\")'; "
        "python3 -c 'import claude_agent_sdk, pathlib; "
        'p = pathlib.Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"; '
        'print("claude", p.is_file())\'; '
        "stat -c '%u %n' /workspace; test -e /home/runner || echo 'no home in image'"
    )
    # Through an exec, not the container's logs: Podman 4.3 can hand back a just-exited
    # container's logs without their last lines (seen: the last two lines missing).
    container = docker_client.containers.run(
        runner_image, ["sleep", "600"], detach=True, network_mode="none", init=True
    )
    try:
        status, raw = container.exec_run(["sh", "-c", script])
    finally:
        container.remove(force=True)
    output = raw.decode()
    assert status == 0, output
    lines = output.splitlines()
    assert lines[:2] == ["1000", "1000"]
    assert any(line.startswith("codex-cli 0.171.0") for line in lines), output
    assert "imports ok" in lines and "claude True" in lines
    assert "1000 /workspace" in lines and "no home in image" in lines

    # Same inputs, same tag: the existing image is returned, nothing is built. (Built once
    # first: the runners' source may have changed since the session's build.)
    first = build_image(docker_client, tag=runner_image, base=base_image)
    build_log: list[str] = []
    assert (
        build_image(docker_client, tag=runner_image, base=base_image, log=build_log.append) == first
    )
    assert build_log == []


@pytest.mark.engine
@pytest.mark.timeout(300)
def test_unusable_base_fails_with_the_build_log(
    docker_client: Any, tmp_path: Path, small_inputs: ContextInputs
) -> None:
    busybox = shutil.which("busybox")
    if busybox is None:
        unavailable("busybox-static is not installed")
    # A base without Python: a 2 MB busybox rootfs, imported (no registry).
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(busybox, arcname="bin/busybox")
        for applet in ("sh", "ls", "getent", "mkdir", "chown", "head"):
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
    answer = docker_client.api.import_image_from_data(buf.getvalue(), repository="localhost/tb")
    from tests.fakes.podman import _imported_id

    image_id = _imported_id(answer)
    try:
        with pytest.raises(ImageError, match="image build failed") as failure:
            build_image(
                docker_client,
                tag="localhost/tribunal-broken:test",
                base=image_id,
                inputs=small_inputs,
            )
        assert "apt-get" in str(failure.value)  # the base lacks git, and apt to get it
        with pytest.raises(Exception):  # noqa: B017  (ImageNotFound: nothing was tagged)
            docker_client.images.get("localhost/tribunal-broken:test")
    finally:
        docker_client.images.remove(image_id, force=True)


@pytest.mark.engine
@pytest.mark.timeout(300)
def test_a_base_the_engine_lacks_and_cannot_pull_says_what_to_do(
    docker_client: Any, small_inputs: ContextInputs
) -> None:
    """Offline, the default base cannot be pulled: the error names --base and a local base.
    (The base's registry is `localhost`, so the failed pull never leaves this machine.)"""
    base = "localhost:9/tribunal-absent-base:none"
    with pytest.raises(ImageError, match="image build failed") as failure:
        build_image(
            docker_client, tag="localhost/tribunal-nobase:test", base=base, inputs=small_inputs
        )
    said = str(failure.value)
    assert f"The base image {base} is not on the engine and could not be pulled" in said
    assert "tribunal image build --base IMAGE" in said and "Python 3.11" in said


def test_cli_build_without_an_engine_fails_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    assert main(["image", "build", "--base", "localhost/none", "--tag", "t:x"]) == 1
    assert "tribunal image:" in capsys.readouterr().err
