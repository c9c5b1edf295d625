"""The bot on the Docker backend: settings → backend choice → DockerBackend → the real Claude runner
in the runner image, against a real engine (Podman) and the fake Messages API on loopback
(network_mode host).

- `auto` picks docker when the engine answers and has the image; with an image the engine lacks,
  `auto` falls back to local with the warning, and an explicit `docker` exits 78.
- A console task through open_app + the engine on containers reaches APPROVED; the containers of
  the bot's instance carry no platform token and no model key (keys go per exec), the agents'
  shells see no platform token either, and once the app is closed no container of the instance
  is left.
- `tribunal chat` (the installed script, default backend auto) runs its turns in containers.
- `tribunal doctor` against the engine: backend docker, engine, image with its id, and the runner
  binaries answering `--version` inside the image.
"""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import open_app
from bot.backend import choose_backend
from bot.cli import EXIT_CONFIG, main
from bot.doctor import run_doctor
from bot.doctor.engine import _version, claude_binary
from bot.settings import load_settings
from container.docker_pool import CONFIG, GROUP, INSTANCE, MANAGED, ROLE
from rooms.base.model import Inbound, RoomRef
from tests.fakes.messages_api import (
    FakeMessagesAPI,
    system_contains,
    text,
    tool_use,
)
from tests.fakes.platform import RecordingAdapter
from tests.fakes.turn_objects import owner_says, reviewer_says

pytestmark = [pytest.mark.engine, pytest.mark.claude, pytest.mark.timeout(300)]

TRIBUNAL = Path(sys.executable).parent / "tribunal"
MISSING_IMAGE = "localhost/tribunal-no-such-image:absent"
SLACK_TOKEN = "xoxb-must-stay-outside"
MODEL_KEY = "sk-ant-bot-docker-test"
_SETTING_PREFIXES = ("TRIBUNAL_", "SLACK_", "DISCORD_", "ANTHROPIC_", "OPENAI_", "DOCKER_")


def docker_host_of(client: Any) -> str:
    """The DOCKER_HOST of the session's engine client (the fixture may have started its own
    Podman on a socket in a temporary folder)."""
    adapter = client.api.adapters.get("http+docker://")
    socket_path = getattr(adapter, "socket_path", None)
    if socket_path:
        return f"unix://{socket_path}"
    return str(client.api.base_url).replace("http://", "tcp://", 1)


@pytest.fixture
def bot_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, docker_client: Any, runner_image: str
) -> dict[str, str]:
    """The environment of a bot on this engine and image, in a fresh working folder; set on
    this process and returned for subprocesses. The backend is left at its default (auto)."""
    for name in list(os.environ):
        if name.startswith(_SETTING_PREFIXES) or name == "CODEX_BIN":
            monkeypatch.delenv(name)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    env = {
        "DOCKER_HOST": docker_host_of(docker_client),
        "TRIBUNAL_DATA": str(tmp_path / "data"),
        "TRIBUNAL_DOCKER__IMAGE": runner_image,
        "TRIBUNAL_DOCKER__NETWORK_MODE": "host",  # the fake model API is on 127.0.0.1
        "TRIBUNAL_DOCKER__MEM_LIMIT": "2g",
        "TRIBUNAL_CONSOLE__USER": "alice",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def instance(bot_env: dict[str, str], docker_client: Any) -> Iterator[str]:
    """The bot's instance label (derived from its data folder). At the end no container of it
    (nor a doctor's throwaway one) may be left: they are removed and the test fails."""
    name = load_settings(env_file=None).docker_instance
    yield name
    left = docker_client.containers.list(all=True, filters={"label": f"{INSTANCE}={name}"})
    left += docker_client.containers.list(all=True, filters={"label": "tribunal.doctor=1"})
    for container in left:
        container.remove(force=True)
    assert not left, f"containers left behind: {[c.name for c in left]}"


def _containers(client: Any, instance: str) -> list[Any]:
    return list(client.containers.list(all=True, filters={"label": f"{INSTANCE}={instance}"}))


# -- the choice -----------------------------------------------------------------------------------


def test_auto_picks_docker_when_the_engine_has_the_image(
    bot_env: dict[str, str], runner_image: str, instance: str
) -> None:
    settings = load_settings(env_file=None)
    assert settings.backend == "auto"
    choice = choose_backend(settings)
    assert choice.kind == "docker" and choice.warning is None
    where = bot_env["DOCKER_HOST"]
    assert choice.reason == f"auto: the engine at {where} has the image {runner_image}"


def test_an_image_the_engine_lacks(
    bot_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    instance: str,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("TRIBUNAL_DOCKER__IMAGE", MISSING_IMAGE)
    where = bot_env["DOCKER_HOST"]
    why = f"the engine at {where} has no image {MISSING_IMAGE} (not found)"

    choice = choose_backend(load_settings(env_file=None))  # auto: local, loudly
    assert choice.kind == "local"
    assert choice.warning is not None and why in choice.warning
    assert "run `tribunal image build`" in choice.warning

    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")  # asked for: a settings error, exit 78
    assert main(["chat"]) == EXIT_CONFIG
    captured = capsys.readouterr()
    assert captured.err == (
        f"tribunal: settings: backend (TRIBUNAL_BACKEND) is docker, but {why}: run `tribunal "
        "image build` (or set TRIBUNAL_DOCKER__IMAGE to the runner image); or set "
        "TRIBUNAL_BACKEND=local to run the turns unisolated\n"
    )
    assert captured.out == "" and not (tmp_path / "data" / "tribunal.db").exists()

    out = io.StringIO()
    assert run_doctor(None, out=out, env_file=None) == 1
    assert f"image: {MISSING_IMAGE} is missing on the engine: run `tribunal image build`" in (
        out.getvalue().splitlines()
    )


# -- turns in containers --------------------------------------------------------------------------


def _script_pair(fake: FakeMessagesAPI, owner_command: str, reviewer_command: str) -> None:
    """Owner: one Bash call, then DONE; reviewer: one Bash call, then APPROVED; the owner's
    wrap-up after approval gets the default (DONE). Replies go in order per role: Claude Code
    (2.1.332, with a budget) sends a `system` message after the tool result, so matching on
    "the last message carries a tool result" (has_tool_result) does not see it."""
    fake.script(
        system_contains("You are the owner"),
        [tool_use("Bash", {"command": owner_command}), owner_says("DONE\ncreated hello.txt")],
    )
    fake.script(
        system_contains("You are the reviewer"),
        [
            tool_use("Bash", {"command": reviewer_command}),
            reviewer_says("APPROVED\nhello.txt says hi"),
        ],
    )


def _tool_outputs(fake: FakeMessagesAPI) -> list[str]:
    """The text of every tool result the agents sent back, in order, each once; not Claude
    Code's acknowledgement of a structured answer (its `StructuredOutput` tool)."""
    seen: dict[str, str] = {}
    for call in fake.calls:
        for message in call.messages:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    body = block.get("content")
                    parts = body if isinstance(body, list) else [{"text": body or ""}]
                    seen.setdefault(
                        str(block.get("tool_use_id")),
                        "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict)),
                    )
    return [text for text in seen.values() if text != "Structured output provided successfully"]


async def test_a_console_task_runs_in_containers_and_leaves_none(
    bot_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    docker_client: Any,
    instance: str,
    workspace: Path,
) -> None:
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    monkeypatch.setenv("TRIBUNAL_CONSOLE__WORKSPACE", str(workspace))
    monkeypatch.setenv("SLACK_BOT_TOKEN", SLACK_TOKEN)  # in the bot's settings: must stay here
    with FakeMessagesAPI(default=text("DONE\nwrapped up")) as fake:
        _script_pair(fake, "id -u; env; echo hi > /workspace/hello.txt", "id -u; env")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", MODEL_KEY)
        settings = load_settings(env_file=None)
        assert settings.slack_bot_token is not None
        warn = io.StringIO()
        room = RoomRef("console", "local", "1")
        async with open_app(settings, RecordingAdapter("console"), warn=warn) as app:
            await app.engine.handle(
                Inbound(room, "alice", "create hello.txt saying hi", "ev-1", mentions_bot=True)
            )
            async with asyncio.timeout(240):
                await app.engine.idle()
            task = await app.store.latest_task_in(room)
            assert task is not None
            turns = await app.store.turns(task.id)
            assert [(t.role, t.status, t.marker, t.output) for t in turns] == [
                ("owner", "done", "DONE", "DONE\ncreated hello.txt"),
                ("reviewer", "done", "APPROVED", "APPROVED\nhello.txt says hi"),
                ("owner", "done", "DONE", "DONE\nwrapped up"),
            ]
            assert task.status == "closed"

            # While the app is open: one container per role, none carrying a secret.
            containers = _containers(docker_client, instance)
            assert sorted(c.labels[ROLE] for c in containers) == ["owner", "reviewer"]
            for container in containers:
                env = "\n".join(container.attrs["Config"]["Env"] or [])
                assert SLACK_TOKEN not in env and "SLACK_" not in env
                assert MODEL_KEY not in env  # model keys travel per exec, not in the container

        assert warn.getvalue() == ""
        assert _containers(docker_client, instance) == []  # closed app: nothing left
        assert (workspace / "hello.txt").read_text() == "hi\n"

        # What the agents' shells saw, owner then reviewer: the container user, the exec's
        # environment (our runner variables), and no platform token.
        results = _tool_outputs(fake)
        assert len(results) == 2, results
        for shell in results:
            assert shell.splitlines()[0].strip() == "1000", shell  # uid in the container
            assert "TRIBUNAL_CODEX_SANDBOX=external" in shell, shell
            assert SLACK_TOKEN not in shell and "SLACK_" not in shell
        # The model key reached every run (per exec), and only the fake saw it.
        assert {c.headers.get("x-api-key") for c in fake.calls} == {MODEL_KEY}


def test_tribunal_chat_on_auto_runs_the_turns_in_containers(
    bot_env: dict[str, str], docker_client: Any, instance: str, workspace: Path
) -> None:
    with FakeMessagesAPI(default=text("DONE\nwrapped up")) as fake:
        # /workspace exists only inside the container: the write proves where the turn ran.
        _script_pair(fake, "echo hi > /workspace/hello.txt", "cat /workspace/hello.txt")
        env = {k: v for k, v in os.environ.items() if not k.startswith(_SETTING_PREFIXES)}
        env.update(
            bot_env,
            ANTHROPIC_BASE_URL=fake.url,
            ANTHROPIC_API_KEY=MODEL_KEY,
            TRIBUNAL_CONSOLE__WORKSPACE=str(workspace),
        )
        done = subprocess.run(
            [str(TRIBUNAL), "chat"],
            input="create hello.txt saying hi\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
        )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr  # auto found the engine and the image
    out = done.stdout
    for part in ("[owner] DONE", "created hello.txt", "[reviewer] APPROVED", "done and closed"):
        assert part in out, out
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert _tool_outputs(fake)[-1] == "hi"  # the reviewer read what the owner wrote
    assert _containers(docker_client, instance) == []


async def test_a_restarted_bot_clears_what_its_instance_left(
    bot_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    docker_client: Any,
    runner_image: str,
    instance: str,
) -> None:
    """A container an earlier run of this bot left (same data folder, so the same derived
    instance) with another config is removed when the app starts; another bot's is not."""
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    labels = {MANAGED: "1", INSTANCE: instance, GROUP: "console", ROLE: "owner"}
    left = docker_client.containers.run(
        runner_image, detach=True, labels={**labels, CONFIG: "an-older-config"}
    )
    neighbour = docker_client.containers.run(
        runner_image, detach=True, labels={**labels, INSTANCE: f"{instance}-other-bot"}
    )
    try:
        async with open_app(load_settings(env_file=None), RecordingAdapter("console")):
            assert _containers(docker_client, instance) == []
            neighbour.reload()
            assert neighbour.status == "running"
        neighbour.reload()
        assert neighbour.status == "running"  # closing removes only this instance's
    finally:
        neighbour.remove(force=True)
    assert left.id not in {c.id for c in docker_client.containers.list(all=True)}


# -- doctor ---------------------------------------------------------------------------------------


def test_doctor_against_the_engine(
    bot_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    docker_client: Any,
    runner_image: str,
    instance: str,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", MODEL_KEY)
    out = io.StringIO()
    status = run_doctor(None, out=out, env_file=None)
    lines = dict(line.split(": ", 1) for line in out.getvalue().splitlines())
    assert status == 0, lines
    where = bot_env["DOCKER_HOST"]
    found = f"the engine at {where} has the image {runner_image}"
    assert lines["backend"] == f"ok (docker, auto: {found})"
    assert lines["engine"].startswith("ok (")
    assert lines["engine"].endswith(f"at {where}; a probe container ran)")
    image_id = str(docker_client.images.get(runner_image).id)
    assert lines["image"] == f"ok ({runner_image}, {image_id[:19]})"
    # The image pins the host's claude-agent-sdk, so its Claude Code is the host's version.
    binary = claude_binary()
    assert binary is not None
    ok, host_version = _version(str(binary))
    assert ok
    assert lines["runner claude"] == f"ok ({host_version}, in the image)"
    assert lines["runner codex"].startswith("ok (codex-cli ")
    assert lines["runner codex"].endswith(", in the image)")
    assert lines["runner command"] == "ok (runners.command, in the image)"
    # These tests opt out of the default network "none": a warning, not a failure.
    assert lines["network"].startswith("network_mode host opts out of egress isolation")
