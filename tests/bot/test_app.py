"""Wiring: which variables reach a run, and which backend runs the turns.

Model credentials per run and per agent type; chat platform tokens never. Checked through the
real LocalBackend with a runner program that reports the environment it was started with.

The backend choice (bot/backend.py): its rules as a table over engine answers, then the real
thing against an engine address where nothing answers (a unix socket that was bound and closed:
connection refused), through open_app and the real CLI. An engine that does answer is in
tests/container/test_bot_docker.py."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.app import CredentialedRunner, make_backend, model_env, open_app
from bot.backend import (
    BackendChoice,
    BackendUnavailable,
    EngineProbe,
    TimeoutCeiling,
    announce,
    choose_backend,
    docker_config,
    probe_engine,
    running_backend,
)
from bot.cli import EXIT_CONFIG, main
from bot.settings import Settings, load_settings
from container.local import LocalBackend
from container.proxy.runner import ProxiedRunner
from runners.protocol import RunEvent, RunRequest, RunSpec
from tests.fakes.platform import RecordingAdapter

TRIBUNAL = Path(sys.executable).parent / "tribunal"

ENV_ECHO = """
import json, os, sys
sys.stdin.readline()
print(json.dumps({"kind": "final", "text": json.dumps(dict(os.environ))}), flush=True)
"""


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/anthropic")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-oai-test")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret")
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "discord-secret")


def spec(agent: str, env: dict[str, str] | None = None) -> RunSpec:
    request = RunRequest(role="owner", prompt="hi")
    return RunSpec(group="console", agent=agent, request=request, env=env or {})  # type: ignore[arg-type]


def test_docker_runs_get_no_model_keys(credentials: None) -> None:
    """The credential proxy holds them (bot/proxy.py); a run gets a token instead."""
    assert model_env(load_settings(env_file=None), "docker") == {"claude": {}, "codex": {}}


def test_model_env_is_split_by_agent_type(credentials: None) -> None:
    env = model_env(load_settings(env_file=None), "local")
    assert env["claude"] == {
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/anthropic",
    }
    assert env["codex"] == {"OPENAI_API_KEY": "sk-oai-test"}


def test_codex_binary_is_passed_for_the_local_backend_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIBUNAL_CODEX_BIN", "/opt/codex/bin/codex")
    settings = load_settings(env_file=None)
    assert model_env(settings, "local")["codex"] == {"CODEX_BIN": "/opt/codex/bin/codex"}
    # In a container the image's codex is on PATH; a host path would not exist there.
    assert model_env(settings, "docker")["codex"] == {}


async def _run_env(runner: CredentialedRunner, run: RunSpec) -> dict[str, str]:
    events: list[RunEvent] = [event async for event in runner.run(run)]
    finals = [e for e in events if e.kind == "final"]
    assert len(finals) == 1, events
    result: dict[str, str] = json.loads(finals[0].text)
    return result


async def test_each_run_gets_the_credentials_of_its_agent_only(
    credentials: None, tmp_path: Path
) -> None:
    script = tmp_path / "env_echo.py"
    script.write_text(ENV_ECHO)
    settings = load_settings(env_file=None)
    backend = LocalBackend(command=[sys.executable, str(script)], env={"HOME": str(tmp_path)})
    runner = CredentialedRunner(backend, model_env(settings, "local"))

    claude = await _run_env(runner, spec("claude"))
    assert claude["ANTHROPIC_API_KEY"] == "sk-ant-test"
    assert claude["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/anthropic"
    assert "OPENAI_API_KEY" not in claude

    codex = await _run_env(runner, spec("codex"))
    assert codex["OPENAI_API_KEY"] == "sk-oai-test"
    assert "ANTHROPIC_API_KEY" not in codex

    # The engine's own checks (resolve's tests) reach no model: they get no key of either.
    command = await _run_env(runner, spec("command"))
    assert "sk-ant-test" not in json.dumps(command) and "sk-oai-test" not in json.dumps(command)

    for env in (claude, codex, command):
        assert not any(k.startswith(("SLACK_", "DISCORD_")) for k in env)
        assert "xoxb-secret" not in json.dumps(env) and "discord-secret" not in json.dumps(env)


async def test_a_value_set_on_the_spec_wins(credentials: None, tmp_path: Path) -> None:
    script = tmp_path / "env_echo.py"
    script.write_text(ENV_ECHO)
    backend = LocalBackend(command=[sys.executable, str(script)])
    runner = CredentialedRunner(backend, model_env(load_settings(env_file=None), "local"))
    env = await _run_env(runner, spec("claude", {"ANTHROPIC_BASE_URL": "http://127.0.0.1:7"}))
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:7"
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-test"


async def test_local_backend_gives_each_group_and_role_a_home_away_from_the_data(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("TRIBUNAL_BACKEND", "local")
    settings = load_settings(env_file=None)
    backend = make_backend(settings)
    assert isinstance(backend, LocalBackend)
    script = tmp_path / "env_echo.py"
    script.write_text(ENV_ECHO)
    backend.command = [sys.executable, str(script)]
    homes = {}
    for group, role in (("g1", "owner"), ("g1", "reviewer"), ("g2", "owner")):
        run = spec("claude", {}).model_copy(update={"group": group})
        run = run.model_copy(update={"request": run.request.model_copy(update={"role": role})})
        homes[(group, role)] = Path((await _run_env(CredentialedRunner(backend, {}), run))["HOME"])
    assert len(set(homes.values())) == 3
    root = tmp_path / "state" / "tribunal" / settings.docker_instance / "homes"
    assert homes[("g1", "reviewer")] == root / "g1" / "reviewer"
    for home in homes.values():
        assert home.is_dir() and (home.stat().st_mode & 0o777) == 0o700
        assert not home.is_relative_to(tmp_path / "data")  # not where the database is
        assert not home.is_relative_to(tmp_path / "user")


# -- which backend runs the turns ---------------------------------------------------------------


def _probe(reachable: bool, image: bool) -> EngineProbe:
    where, name = "unix:///run/engine.sock", "tribunal-runner:latest"
    if not reachable:
        return EngineProbe(where, name, error="Connection refused")
    if not image:
        return EngineProbe(where, name, "1.41", "Podman Engine 4.3.1", image_error="not found")
    return EngineProbe(where, name, "1.41", "Podman Engine 4.3.1", image_id="sha256:abc")


def _settings(monkeypatch: pytest.MonkeyPatch, backend: str | None) -> Settings:
    if backend is not None:
        monkeypatch.setenv("TRIBUNAL_BACKEND", backend)
    return load_settings(env_file=None)


@pytest.mark.parametrize(
    ("backend", "reachable", "image", "kind", "warning"),
    [
        # auto: docker only when the engine answers AND has the image; else local, loudly.
        (None, True, True, "docker", None),
        (None, True, False, "local", "has no image tribunal-runner:latest (not found)"),
        (None, False, False, "local", "no Docker-API engine answers at unix:///run/engine.sock"),
        ("docker", True, True, "docker", None),
        ("local", True, True, "local", None),  # asked for: no warning, even with an engine
        ("local", False, False, "local", None),
    ],
)
def test_backend_choice_rules(
    monkeypatch: pytest.MonkeyPatch,
    backend: str | None,
    reachable: bool,
    image: bool,
    kind: str,
    warning: str | None,
) -> None:
    settings = _settings(monkeypatch, backend)
    assert settings.backend == (backend or "auto")
    choice = choose_backend(settings, lambda _: _probe(reachable, image))
    assert choice.kind == kind
    if warning is None:
        assert choice.warning is None
    else:
        assert choice.warning is not None
        assert "NOT isolated in containers" in choice.warning and warning in choice.warning
        assert "tribunal image build" in choice.warning  # what to do, in both cases


@pytest.mark.parametrize(
    ("reachable", "why", "fix"),
    [
        (False, "no Docker-API engine answers at unix:///run/engine.sock (Connection refused)",
         "start Docker or Podman and point DOCKER_HOST at its socket"),
        (True, "the engine at unix:///run/engine.sock has no image tribunal-runner:latest",
         "run `tribunal image build`"),
    ],
)  # fmt: skip
def test_docker_asked_for_but_unusable_is_a_settings_error(
    monkeypatch: pytest.MonkeyPatch, reachable: bool, why: str, fix: str
) -> None:
    settings = _settings(monkeypatch, "docker")
    with pytest.raises(BackendUnavailable) as raised:
        choose_backend(settings, lambda _: _probe(reachable, False))
    [line] = raised.value.lines
    assert line.startswith("settings: backend (TRIBUNAL_BACKEND) is docker, but ")
    assert why in line and fix in line
    assert line.endswith("or set TRIBUNAL_BACKEND=local to run the turns unisolated")


def test_local_backend_never_asks_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_probe(_: Settings) -> EngineProbe:
        raise AssertionError("the engine was asked")

    assert choose_backend(_settings(monkeypatch, "local"), no_probe).kind == "local"


@pytest.fixture
def closed_socket() -> Iterator[str]:
    """DOCKER_HOST for a unix socket that was bound and closed: the file is there, nobody
    listens (connection refused). In its own short folder: socket paths are limited to 107
    bytes, and pytest's tmp_path can be longer."""
    folder = Path(tempfile.mkdtemp(prefix="tb-", dir="/tmp"))
    path = folder / "engine.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
    yield f"unix://{path}"
    shutil.rmtree(folder)


def test_probe_of_a_closed_socket_says_connection_refused(
    monkeypatch: pytest.MonkeyPatch, closed_socket: str
) -> None:
    monkeypatch.setenv("DOCKER_HOST", closed_socket)
    found = probe_engine(load_settings(env_file=None))
    assert not found.reachable and not found.usable
    assert (found.where, found.error) == (closed_socket, "Connection refused")


@pytest.fixture
def no_podman(monkeypatch: pytest.MonkeyPatch) -> str:
    """A PATH without podman (only this venv's bin): `auto` cannot start an engine of its own."""
    path = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", path)
    return path


async def test_auto_without_an_engine_runs_locally(
    monkeypatch: pytest.MonkeyPatch, closed_socket: str, tmp_path: Path, no_podman: str
) -> None:
    monkeypatch.setenv("DOCKER_HOST", closed_socket)
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    warn = io.StringIO()
    settings = load_settings(env_file=None)
    async with running_backend(settings, warn=warn) as (runner, choice):
        assert isinstance(runner, ProxiedRunner) and isinstance(runner.inner, LocalBackend)
        assert choice.kind == "local" and choice.reason.startswith("auto: no Docker-API engine")
    assert warn.getvalue().startswith("tribunal: WARNING: the turns run as plain processes")


def test_auto_without_an_engine_warns_through_the_cli(
    closed_socket: str, tmp_path: Path, no_podman: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIBUNAL_", "DOCKER_"))}
    env.update(
        DOCKER_HOST=closed_socket, TRIBUNAL_DATA=str(tmp_path / "data"), TRIBUNAL_CONSOLE__USER="a"
    )
    # A key, so that the only line on stderr is the engine's (with none, the banner also names
    # the missing credential: tests/bot/test_first_run.py).
    env["ANTHROPIC_API_KEY"] = "sk-ant-test"
    done = subprocess.run(
        [str(TRIBUNAL), "chat"],
        input="/status\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Tribunal console")
    [warning] = done.stderr.splitlines()
    assert warning.startswith("tribunal: WARNING: the turns run as plain processes on this machine")
    for part in (f"no Docker-API engine answers at {closed_socket} (Connection refused)",
                 "point DOCKER_HOST at its socket", "then run `tribunal image build`",
                 "Set TRIBUNAL_BACKEND=local"):  # fmt: skip
        assert part in warning, warning


def test_docker_without_an_engine_exits_78_through_the_cli(
    monkeypatch: pytest.MonkeyPatch,
    closed_socket: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    monkeypatch.setenv("DOCKER_HOST", closed_socket)
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    assert main(["chat"]) == EXIT_CONFIG
    captured = capsys.readouterr()
    assert captured.err == (
        "tribunal: settings: backend (TRIBUNAL_BACKEND) is docker, but no Docker-API engine "
        f"answers at {closed_socket} (Connection refused): start Docker or Podman and point "
        "DOCKER_HOST at its socket; or set TRIBUNAL_BACKEND=local to run the turns unisolated\n"
    )
    assert captured.out == ""  # no console banner: nothing started
    assert not (tmp_path / "data" / "tribunal.db").exists()  # and nothing was written


async def test_docker_without_an_engine_fails_open_app_before_the_store(
    monkeypatch: pytest.MonkeyPatch, closed_socket: str, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIBUNAL_BACKEND", "docker")
    monkeypatch.setenv("DOCKER_HOST", closed_socket)
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    with pytest.raises(BackendUnavailable):
        async with open_app(load_settings(env_file=None), RecordingAdapter("console")):
            raise AssertionError("the app opened")
    assert not (tmp_path / "data" / "tribunal.db").exists()


class _SpecRecorder:
    def __init__(self) -> None:
        self.specs: list[RunSpec] = []

    async def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        self.specs.append(spec)
        yield RunEvent(kind="final", text="DONE")


@pytest.mark.parametrize(
    ("group", "ceiling", "expected"),
    [((300, 1800), (300, 1800), (300, 1800)), ((30, 600), (300, 1800), (30, 600)),
     ((900, 7200), (120, 3600), (120, 3600)), ((90, 100), (120, 50), (90, 50))],
)  # fmt: skip
async def test_container_turns_keep_the_group_timeouts_under_the_docker_ceilings(
    group: tuple[float, float], ceiling: tuple[float, float], expected: tuple[float, float]
) -> None:
    inner = _SpecRecorder()
    runner = TimeoutCeiling(inner, *ceiling)
    run = spec("claude").model_copy(update={"idle_timeout_s": group[0], "hard_timeout_s": group[1]})
    events = [event async for event in runner.run(run)]
    assert [e.kind for e in events] == ["final"]
    [seen] = inner.specs
    assert (seen.idle_timeout_s, seen.hard_timeout_s) == expected


# -- the Docker settings the backend is made from ------------------------------------------------


def test_docker_settings_defaults_and_the_config_made_from_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    settings = load_settings(env_file=None)
    assert settings.backend == "auto"
    # "none": no network in the containers, the model APIs only through the credential proxy.
    assert settings.docker.network_mode == "none" and settings.docker.instance is None
    config = docker_config(settings)
    assert config.instance == settings.docker_instance
    assert (config.image, config.network_mode) == ("tribunal-runner:latest", "none")
    assert (config.mem_limit, config.nano_cpus, config.pids_limit) == ("4g", 2_000_000_000, 512)
    assert (config.max_idle_s, config.max_per_group) == (6 * 3600.0, 6)

    Path("tribunal.toml").write_text(
        '[docker]\nnetwork_mode = "host"\ninstance = "team-a"\nimage = "runner:9"\n'
        "retire_idle_s = 600\nmax_containers_per_group = 9\n"
    )
    config = docker_config(load_settings(env_file=None))
    assert (config.network_mode, config.instance, config.image) == ("host", "team-a", "runner:9")
    assert (config.max_idle_s, config.max_per_group) == (600.0, 9)


def test_default_instance_is_stable_per_data_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "one"))
    first = load_settings(env_file=None).docker_instance
    assert load_settings(env_file=None).docker_instance == first  # a restart finds its own
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "one" / ".." / "one"))
    assert load_settings(env_file=None).docker_instance == first  # the same folder, spelled anew
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "two"))
    assert load_settings(env_file=None).docker_instance != first  # another bot: another instance
    assert re.fullmatch(r"data-[0-9a-f]{12}", first)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("TRIBUNAL_BACKEND", "kubernetes",
         "settings: backend (TRIBUNAL_BACKEND): must be 'auto', 'local' or 'docker' "
         "(got 'kubernetes')"),
        ("TRIBUNAL_DOCKER__INSTANCE", "team a",
         "settings: docker.instance: use 1 to 63 letters, digits, '_', '-' or '.', starting "
         "with a letter or digit (got 'team a')"),
        ("TRIBUNAL_DOCKER__NETWORK_MODE", "",
         "settings: docker.network_mode: string should have at least 1 character (got '')"),
    ],
)  # fmt: skip
def test_bad_backend_settings_exit_78_naming_the_field(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    message: str,
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(["chat"]) == EXIT_CONFIG
    assert capsys.readouterr().err == f"tribunal: {message}\n"


@pytest.mark.parametrize("log_to_out", [True, False], ids=["log-on-stderr", "log-elsewhere"])
def test_the_fallback_warning_is_read_once(log_to_out: bool) -> None:
    # The warning goes to the banner's stream; the log gets it too only when the log is written
    # somewhere else (with the log on stderr as well, a person read it twice).
    out, elsewhere = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(out if log_to_out else elsewhere)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        announce(BackendChoice("local", "auto", warning="WARNING: not isolated"), out)
    finally:
        root.removeHandler(handler)
    assert out.getvalue().count("not isolated") == 1
    assert elsewhere.getvalue().count("not isolated") == (0 if log_to_out else 1)
