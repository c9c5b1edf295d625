"""A whole owner/reviewer task on the Docker backend as the bot runs it by default: containers
with no network (network_mode "none"), the model reached only through the bot's credential
proxy, the real Claude Code in the runner image against the fake Messages API.

Inside the containers no real key appears: not in the containers' or any process's environment
(/proc/*/environ, read by the agents' own shells), not in any file they can write; the agents'
shells cannot reach the fake API directly; every request the fake saw came through the proxy
with the real key; and each run token stops working when its turn ends.
"""

from __future__ import annotations

import asyncio
import base64
import io
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app import open_app
from bot.settings import load_settings
from rooms.model import Inbound, RoomRef
from tests.container.test_bot_docker import (  # noqa: F401  (fixtures)
    _containers,
    _tool_outputs,
    bot_env,
    instance,
)
from tests.fakes.messages_api import FakeMessagesAPI, system_contains, text, tool_use
from tests.fakes.platform import RecordingAdapter

pytestmark = [pytest.mark.engine, pytest.mark.claude, pytest.mark.timeout(300)]
MODEL_KEY = "sk-ant-isolation-REAL-key-0123456789"


def _leak_check(then: str) -> str:
    """A shell command that counts the real key in every process's environment and in the
    writable files, and shows the run's token; the key itself is never in the command (it is
    decoded at run time, so a transcript of the command does not hold it either)."""
    encoded = base64.b64encode(MODEL_KEY.encode()).decode()
    return (
        f"k=$(echo {encoded} | base64 -d); "
        'echo "environ-with-key:$(cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" '
        '| grep -cF "$k")"; '
        'echo "environ-with-token:$(for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < $f '
        '2>/dev/null | grep -q "^ANTHROPIC_API_KEY=tribunal-run-" && echo $f; done | wc -l)"; '
        'echo "files-with-key:$(grep -rlF "$k" /home /tmp /workspace /run 2>/dev/null | wc -l)"; '
        'echo "token:$ANTHROPIC_API_KEY"; '
        f"{then}"
    )


def _direct_check(fake_url: str) -> str:
    host, port = fake_url.removeprefix("http://").split(":")
    return (
        'python3 -c "import socket\n'
        "try:\n"
        f"    socket.create_connection(('{host}', {port}), timeout=2); print('direct:open')\n"
        "except OSError as e:\n"
        "    print('direct:' + type(e).__name__)\""
    )


async def _status_with(socket_path: Path, token: str) -> int:
    connector = aiohttp.UnixConnector(path=str(socket_path))
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.post(
            "http://proxy/v1/messages",
            headers={"x-api-key": token},
            json={"model": "m", "max_tokens": 5, "messages": []},
        ) as answer,
    ):
        return answer.status


def _field(output: str, name: str) -> str:
    for line in output.splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {name} in {output!r}")


async def test_a_task_through_the_proxy_with_no_network(
    bot_env: dict[str, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    docker_client: Any,
    instance: str,  # noqa: F811
    workspace: Path,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    monkeypatch.delenv("TRIBUNAL_DOCKER__NETWORK_MODE")  # the default: none
    monkeypatch.setenv("TRIBUNAL_CONSOLE__WORKSPACE", str(workspace))
    with FakeMessagesAPI(default=text("DONE\nwrapped up")) as fake:
        owner = _leak_check("echo hi > /workspace/hello.txt")
        reviewer = _leak_check(_direct_check(fake.url))
        fake.script(
            system_contains("You are the owner"),
            [tool_use("Bash", {"command": owner}), text("DONE\ncreated hello.txt")],
        )
        fake.script(
            system_contains("You are the reviewer"),
            [tool_use("Bash", {"command": reviewer}), text("APPROVED\nlooks right")],
        )
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", MODEL_KEY)
        settings = load_settings(env_file=None)
        assert settings.docker.network_mode == "none"
        room = RoomRef("console", "local", "1")
        warn = io.StringIO()
        async with open_app(settings, RecordingAdapter("console"), warn=warn) as app:
            await app.engine.handle(
                Inbound(room, "alice", "create hello.txt saying hi", "ev-1", mentions_bot=True)
            )
            async with asyncio.timeout(240):
                await app.engine.idle()
            task = await app.store.latest_task_in(room)
            assert task is not None and task.status == "closed"
            turns = await app.store.turns(task.id)
            assert [(t.role, t.status, t.marker) for t in turns] == [
                ("owner", "done", "DONE"),
                ("reviewer", "done", "APPROVED"),
                ("owner", "done", "DONE"),
            ]
            for container in _containers(docker_client, instance):
                assert container.attrs["HostConfig"]["NetworkMode"] == "none"
                assert MODEL_KEY not in "\n".join(container.attrs["Config"]["Env"] or [])

            shells = _tool_outputs(fake)
            assert len(shells) == 2, shells
            tokens = []
            for shell in shells:
                assert MODEL_KEY not in shell
                assert _field(shell, "environ-with-key") == "0", shell
                # The check reads other processes' environment: the runner's and Claude Code's
                # hold the run token, and it finds them.
                assert int(_field(shell, "environ-with-token")) >= 2, shell
                assert _field(shell, "files-with-key") == "0", shell
                tokens.append(_field(shell, "token"))
            assert _field(shells[1], "direct") in ("ConnectionRefusedError", "OSError"), shells
            assert len(set(tokens)) == 2 and all(t.startswith("tribunal-run-") for t in tokens)
            # The turns are over: their tokens no longer open the proxy (the bot still runs).
            socket_path = Path(bot_env["TRIBUNAL_DATA"]) / "proxy" / "proxy.sock"
            for token in tokens:
                assert await _status_with(socket_path, token) == 401
        assert warn.getvalue() == ""
        assert (workspace / "hello.txt").read_text() == "hi\n"
        assert {c.headers.get("x-api-key") for c in fake.calls} == {MODEL_KEY}
        assert not socket_path.exists()  # the proxy stopped with the bot
