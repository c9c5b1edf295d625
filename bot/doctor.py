"""`tribunal doctor`: one line per check, "ok" or what to do; exit 0 when every required check
passes, 1 otherwise.

Checks: settings; model credentials for the agent types in use; chat platform tokens; the runner
binaries (claude from the claude_agent_sdk wheel, codex on PATH or configured); the database
(opens, schema at the latest migration); the container engine (answers a ping). Which checks are
required depends on the settings: with the local backend an unreachable engine is a warning (the
turns run unisolated), with the docker backend it is a failure.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bot.settings import Settings, SettingsError, load_settings

VERSION_TIMEOUT_S = 60.0  # the first start of a 400 MB binary from a cold disk can be slow
PING_TIMEOUT_S = 5


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    text: str  # "ok (…)" when ok, else what to do
    required: bool = True

    @property
    def line(self) -> str:
        return f"{self.name}: {self.text}"


def run_doctor(config: Path | None, *, out: TextIO, env_file: Path | None = Path(".env")) -> int:
    checks = list(diagnose(config, env_file=env_file))
    for check in checks:
        out.write(check.line + "\n")
    out.flush()
    return 0 if all(c.ok or not c.required for c in checks) else 1


def diagnose(config: Path | None, *, env_file: Path | None = Path(".env")) -> Iterator[Check]:
    try:
        settings = load_settings(config, env_file=env_file)
    except SettingsError as exc:
        problems = "; ".join(line.removeprefix("settings: ") for line in exc.lines)
        yield Check("settings", False, f"fix: {problems}")
        yield Check("other checks", False, "skipped until the settings are valid")
        return
    yield Check("settings", True, f"ok ({_describe(settings)})")
    yield check_credentials(settings)
    yield check_platforms(settings)
    yield check_claude(settings)
    yield check_codex(settings)
    yield check_database(settings)
    yield check_engine(settings)


def _describe(settings: Settings) -> str:
    groups = 1 + len(settings.groups)
    return f"{groups} group{'s' if groups > 1 else ''}, backend {settings.backend}"


def _users_of(settings: Settings, agent: str) -> list[str]:
    return [name for name, _, _, g in settings.all_groups() if agent in g.agents_in_use()]


def check_credentials(settings: Settings) -> Check:
    found, missing = [], []
    needs = {
        "claude": (settings.anthropic_api_key, settings.anthropic_base_url, "ANTHROPIC"),
        "codex": (settings.openai_api_key, settings.openai_base_url, "OPENAI"),
    }
    for agent in sorted(settings.agents_in_use()):
        key, base_url, prefix = needs[agent]
        if key is not None:
            found.append(f"{agent}: {prefix}_API_KEY")
        elif base_url:
            found.append(f"{agent}: {prefix}_BASE_URL {base_url}")
        else:
            groups = ", ".join(_users_of(settings, agent))
            missing.append(f"set {prefix}_API_KEY (or {prefix}_BASE_URL) for {agent} ({groups})")
    if missing:
        return Check("credentials", False, "; ".join(missing))
    return Check("credentials", True, f"ok ({'; '.join(found)})")


def check_platforms(settings: Settings) -> Check:
    problems, found = [], []
    slack_groups = [n for n, g in settings.groups.items() if g.platform == "slack"]
    discord_groups = [n for n, g in settings.groups.items() if g.platform == "discord"]
    if settings.slack_bot_token is not None:
        if settings.slack_app_token is not None:
            found.append("slack (Socket Mode)")
        elif settings.slack_signing_secret is not None and settings.http_port is not None:
            found.append(f"slack (HTTP mode on port {settings.http_port})")
        else:
            problems.append(
                "set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET and "
                "TRIBUNAL_HTTP_PORT (HTTP mode)"
            )
    elif slack_groups:
        problems.append(f"set SLACK_BOT_TOKEN for the slack groups ({', '.join(slack_groups)})")
    if settings.discord_bot_token is not None:
        found.append("discord")
    elif discord_groups:
        groups = ", ".join(discord_groups)
        problems.append(f"set DISCORD_BOT_TOKEN for the discord groups ({groups})")
    if problems:
        return Check("platforms", False, "; ".join(problems))
    if not found:
        return Check("platforms", True, "ok (console only: no Slack or Discord token set)")
    return Check("platforms", True, f"ok ({', '.join(found)}, and the console room)")


def claude_binary() -> Path | None:
    """The Claude Code binary bundled in the claude_agent_sdk wheel, if that is installed."""
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    return Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"


def _version(binary: str) -> tuple[bool, str]:
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return False, f"`{binary} --version` did not answer within {VERSION_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return False, f"`{binary} --version` cannot run: {exc.strerror}"
    output = (done.stdout or done.stderr).strip().splitlines()
    first = output[0] if output else ""
    if done.returncode != 0:
        return False, f"`{binary} --version` exited {done.returncode}: {first}"
    return True, first


def _runner_required(settings: Settings, agent: str) -> bool:
    # With the docker backend the binaries live in the image, not on this host.
    return settings.backend == "local" and agent in settings.agents_in_use()


def check_claude(settings: Settings) -> Check:
    required = _runner_required(settings, "claude")
    binary = claude_binary()
    if binary is None or not binary.is_file():
        return Check(
            "runner claude", False, "install claude-agent-sdk (it bundles Claude Code)", required
        )
    ok, version = _version(str(binary))
    if not ok:
        return Check("runner claude", False, f"reinstall claude-agent-sdk: {version}", required)
    return Check("runner claude", True, f"ok ({version}, {binary})", required)


def check_codex(settings: Settings) -> Check:
    required = _runner_required(settings, "codex")
    configured = settings.codex_bin or os.environ.get("CODEX_BIN")
    binary = configured or shutil.which("codex")
    if not binary:
        what = "install the Codex CLI (npm @openai/codex) or set TRIBUNAL_CODEX_BIN"
        if not required:
            what = "not found (not needed: no group uses codex here)"
        return Check("runner codex", False, what, required)
    ok, version = _version(binary)
    if not ok:
        return Check("runner codex", False, f"fix the Codex CLI: {version}", required)
    return Check("runner codex", True, f"ok ({version}, {binary})", required)


def check_database(settings: Settings) -> Check:
    path = settings.db_path
    if not path.exists():
        folder = _existing_parent(path)
        if not folder.is_dir():
            return Check("database", False, f"{path} cannot be created: {folder} is not a folder")
        if not os.access(folder, os.W_OK):
            return Check("database", False, f"{path} cannot be created: {folder} is not writable")
        return Check("database", True, f"ok ({path} will be created on the first run)")
    try:
        version, latest = asyncio.run(_schema_versions(path))
    except Exception as exc:  # any failure to open is the answer this check gives
        return Check("database", False, f"{path} does not open: {exc}")
    if version != latest:
        return Check("database", False, f"{path} is at schema {version}, latest is {latest}")
    return Check("database", True, f"ok ({path}, schema {version})")


def _existing_parent(path: Path) -> Path:
    for parent in path.absolute().parents:
        if parent.exists():
            return parent
    return Path("/")


async def _schema_versions(path: Path) -> tuple[int, int]:
    from rooms.schema import LATEST
    from rooms.store import Store

    store = await Store.open(str(path))  # opening applies any missing migration
    try:
        return await store.schema_version(), LATEST
    finally:
        await store.close()


def check_engine(settings: Settings, ping: Callable[[str | None], str] | None = None) -> Check:
    required = settings.backend == "docker"
    where = settings.docker_host or os.environ.get("DOCKER_HOST") or "the default socket"
    try:
        version = (ping or ping_engine)(settings.docker_host)
    except Exception as exc:  # the docker SDK raises many kinds; all mean "not reachable"
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        if required:
            return Check(
                "engine",
                False,
                f"not reachable at {where} ({reason}): start Docker or Podman, or set DOCKER_HOST",
            )
        return Check(
            "engine",
            False,
            f"not reachable at {where}: turns would run unisolated with the local backend",
            required=False,
        )
    note = "" if required else "; set TRIBUNAL_BACKEND=docker to isolate the turns"
    return Check("engine", True, f"ok (API {version} at {where}{note})", required)


def ping_engine(host: str | None) -> str:
    """Ping the Docker-API engine at `host` (None: DOCKER_HOST or the default socket)."""
    import docker

    client = (
        docker.DockerClient(base_url=host, timeout=PING_TIMEOUT_S)
        if host
        else docker.from_env(timeout=PING_TIMEOUT_S)
    )
    try:
        client.ping()
        return str(client.api.api_version)
    finally:
        client.close()
