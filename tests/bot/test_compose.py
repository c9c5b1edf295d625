"""compose.yaml (README "Running at scale") against Compose itself and against the code.

What is checked here, and what is not: Compose v1 (Debian's `docker-compose`, installed by
tests/run) resolves the file (`config`: its YAML, anchors and merges, `${…:?…}` interpolation,
`.env`, depends_on conditions); its answer is then held against the code: the bot image's
entrypoint is our console script and its commands are real subcommands, every variable the
file gives the bots is read by the settings, the bots keep their data at TRIBUNAL_DATA on a
volume of their own, the engine mounts the bots' volumes at the same paths (containers mount
worktrees and the proxy socket by path), and the database URL matches the database service.
Nothing is started here: the file's images (postgres, docker:dind) come from a container
registry, which these machines cannot reach. `python -m tests.fakes.compose` (by hand, minutes)
starts `db` and `migrate` for real with stand-ins built from the registry-free base.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

import bot.platforms  # noqa: F401  (the settings read the platforms' declarations)
from bot.cli import build_parser
from bot.settings import load_settings
from bot.settings_sections import SettingsError
from tests.fakes.required import unavailable

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
DOTENV = {  # what the file's header says goes into .env
    "POSTGRES_PASSWORD": "pw4tests",
    "SLACK_BOT_TOKEN": "xoxb-compose-test",
    "SLACK_APP_TOKEN": "xapp-compose-test",
    "ANTHROPIC_API_KEY": "sk-ant-compose-test",
    "OPENAI_API_KEY": "sk-compose-test",
    "DISCORD_BOT_TOKEN": "discord-compose-test",
}
BOTS = ("bot-a", "bot-b")


def compose_config(project: Path, dotenv: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`docker-compose config` of the repository's compose.yaml, with `project` as the project
    folder (its `.env`, the build context) and a clean environment."""
    binary = shutil.which("docker-compose")
    if binary is None:
        unavailable("docker-compose (Debian's Compose v1) is not installed")
    (project / ".env").write_text("".join(f"{k}={v}\n" for k, v in dotenv.items()))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(project)}
    return subprocess.run(
        [binary, "--project-directory", str(project), "-f", str(COMPOSE), "config"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.fixture(scope="module")
def resolved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    project = tmp_path_factory.mktemp("compose")
    done = compose_config(project, DOTENV)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    config["project"] = str(project)
    return dict(config)


def test_compose_accepts_the_file_and_its_services_are_the_readmes(
    resolved: dict[str, Any],
) -> None:
    services = resolved["services"]
    assert sorted(services) == ["bot-a", "bot-b", "db", "engine", "migrate"]
    assert sorted(resolved["volumes"]) == ["data-a", "data-b", "engine", "pgdata", "work"]
    for name in (*BOTS, "migrate"):
        assert services[name]["build"] == {
            "context": resolved["project"],
            "dockerfile": "bot/Dockerfile",
        }
        assert services[name]["depends_on"]["db"] == {"condition": "service_healthy"}
    for name in BOTS:
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }
        for key in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "ANTHROPIC_API_KEY"):  # from .env
            assert services[name]["environment"][key] == DOTENV[key]
    assert services["db"]["healthcheck"]["test"][0] == "CMD-SHELL"


def test_a_missing_password_is_refused_by_compose_with_the_files_own_words(
    tmp_path: Path,
) -> None:
    done = compose_config(tmp_path, {k: v for k, v in DOTENV.items() if k != "POSTGRES_PASSWORD"})
    assert done.returncode != 0
    assert "set POSTGRES_PASSWORD in .env" in done.stderr


def test_the_bot_image_runs_tribunal_and_the_commands_are_real_subcommands(
    resolved: dict[str, Any],
) -> None:
    dockerfile = (ROOT / "bot" / "Dockerfile").read_text()
    assert re.search(r'^ENTRYPOINT \["tribunal"\]$', dockerfile, re.M)
    [default] = re.findall(r"^CMD (.+)$", dockerfile, re.M)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'tribunal = "bot.cli:main"' in pyproject
    # `image build` run in this image fetches the runner image's inputs: pip and npm.
    assert re.search(r"apt-get install -y --no-install-recommends .*\bnpm\b", dockerfile)
    # Every package of ours is copied into the image (pyproject's packages.find).
    for package in ("bot", "rooms", "runners", "container", "prompts"):
        assert f"COPY {package} {package}" in dockerfile
    parser = build_parser()
    commands = [json.loads(default)]
    commands += [resolved["services"][n].get("command") for n in ("migrate", *BOTS)]
    header = COMPOSE.read_text().split("\nx-bot:")[0]
    [run] = re.findall(r"docker compose run --rm bot-a (.+?)\s+#", header)
    commands.append(run.split())
    readme = (ROOT / "README.md").read_text()
    [run_in_readme] = re.findall(r"`docker compose run --rm bot-a ([^`]+)`", readme)
    assert run_in_readme == run  # the entrypoint is `tribunal`: not named again
    for argv in filter(None, commands):
        args = parser.parse_args(argv)
        assert callable(args.handler), argv


def test_every_variable_the_bots_are_given_is_read_by_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    declared = yaml.safe_load(COMPOSE.read_text())["services"]
    for name in (*BOTS, "migrate"):
        env = {k: str(v) for k, v in declared[name]["environment"].items()}
        env["TRIBUNAL_DB"] = env["TRIBUNAL_DB"].replace(
            "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}", DOTENV["POSTGRES_PASSWORD"]
        )
        if name in BOTS:
            env.update({k: v for k, v in DOTENV.items() if k != "POSTGRES_PASSWORD"})
        whole = settings_of(env, tmp_path, monkeypatch)
        for variable in env:
            without = {k: v for k, v in env.items() if k != variable}
            try:
                changed = settings_of(without, tmp_path, monkeypatch) != whole
            except SettingsError:  # refused without it (a shard id needs its count): read
                changed = True
            assert changed, f"{name}: {variable} changes no setting"
        if name in BOTS:
            assert str(whole["data"]) == env["TRIBUNAL_DATA"]
        assert whole["backend"] == "docker" and whole["db"] == env["TRIBUNAL_DB"]


def settings_of(env: dict[str, str], folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in list(os.environ):
        if name.startswith(("TRIBUNAL_", "DOCKER_", "SLACK_", "DISCORD_", "ANTHROPIC_", "OPENAI_")):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(folder)
    settings = load_settings(env_file=None)
    dumped = settings.model_dump()
    dumped["db"] = settings.db_url or settings.db  # the URL, however the field keeps it
    dumped["slack"] = [settings.platform_value("slack", k) for k in ("bot_token", "app_token")]
    dumped["discord"] = [
        settings.platform_value("discord", k) for k in ("bot_token", "shard_count", "shard_ids")
    ]
    return dumped


def test_the_data_volumes_are_where_the_bots_and_the_engine_expect_them(
    resolved: dict[str, Any],
) -> None:
    services = resolved["services"]
    engine_mounts = {m.rsplit(":", 1)[0] for m in services["engine"]["volumes"]}
    data_volumes = set()
    for name in BOTS:
        bot = services[name]
        data = bot["environment"]["TRIBUNAL_DATA"]
        mounts = [m.split(":") for m in bot["volumes"]]
        [volume] = [source for source, target, _ in mounts if target == data]
        assert volume in resolved["volumes"], f"{name}: {data} is not on a named volume"
        data_volumes.add(volume)
        for source, target, _mode in mounts:
            if source in resolved["volumes"]:  # a named volume: the engine needs it too
                assert f"{source}:{target}" in engine_mounts, (name, source, target)
        # The settings file is where the image's working folder reads it.
        assert any(t == "/srv/tribunal/tribunal.toml" and m == "ro" for _, t, m in mounts)
    assert len(data_volumes) == len(BOTS)  # each bot its own data folder
    dockerfile = (ROOT / "bot" / "Dockerfile").read_text()
    assert re.findall(r"^WORKDIR (.+)$", dockerfile, re.M)[-1] == "/srv/tribunal"


def test_the_bots_reach_the_database_and_the_engine_of_the_file(
    resolved: dict[str, Any],
) -> None:
    services = resolved["services"]
    db = services["db"]["environment"]
    for name in (*BOTS, "migrate"):
        url = urlsplit(services[name]["environment"]["TRIBUNAL_DB"])
        assert url.scheme == "postgresql" and url.hostname == "db"
        assert (url.username, url.password) == (db["POSTGRES_USER"], db["POSTGRES_PASSWORD"])
        assert url.path == f"/{db['POSTGRES_DB']}"
        host = urlsplit(services[name]["environment"]["DOCKER_HOST"])
        assert host.hostname == "engine" and host.port == 2375
    assert services["engine"]["environment"]["DOCKER_TLS_CERTDIR"] == ""  # dind's plain 2375
    assert "ports" not in services["engine"]  # the engine's API stays on the compose network


def test_the_build_context_holds_what_the_bot_image_copies_and_no_secret(tmp_path: Path) -> None:
    """.dockerignore, as the docker SDK (which Compose v1 builds with) applies it: a checkout
    where the bot ran has .env (tokens), a data folder (every conversation) and .venv."""
    from docker.utils.build import exclude_paths

    checkout = tmp_path / "checkout"
    shutil.copytree(
        ROOT, checkout, ignore=shutil.ignore_patterns(".git", ".venv", "*_cache", "tests")
    )
    for secret in (".env", ".tribunal/tribunal.db", ".venv/bin/python", "tribunal.toml"):
        (checkout / secret).parent.mkdir(parents=True, exist_ok=True)
        (checkout / secret).write_text("not for the image\n")
    patterns = [
        line.strip()
        for line in (checkout / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    sent = exclude_paths(str(checkout), patterns, dockerfile="bot/Dockerfile")
    copied = re.findall(r"^COPY (.+) \S+$", (ROOT / "bot" / "Dockerfile").read_text(), re.M)
    for sources in copied:
        for source in sources.split():
            assert source in sent or any(p.startswith(f"{source}/") for p in sent), source
    assert "bot/Dockerfile" in sent
    tops = {path.split("/")[0] for path in sent}
    assert tops <= {
        ".dockerignore",
        "README.md",
        "pyproject.toml",
        *(s for c in copied for s in c.split()),
    }
