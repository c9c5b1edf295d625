"""`tribunal doctor`: one line per check, "ok" or what to do; exit 0 when every required check
passes, 1 otherwise.

Checks: settings; model credentials for the agent types in use; chat platform tokens (Slack's
against the Web API: auth.test and the scopes, bot/slack/doctor.py; for Discord also the token
itself, the message-content intent and the bot's permissions in each registered channel,
bot/discord/doctor.py); the backend
the bot would use and why (bot/backend.py: `auto` picks docker when the engine answers and has
the image); the container engine (answers a ping: name, version, API version); the runner image
(present, with its id); the runner binaries; on the docker backend, the containers' network
and the workspaces' owner (bot/doctor_isolation.py); the database (opens, schema at the latest
migration).

The runner binaries are checked where the turns will run. On the local backend: claude from the
claude_agent_sdk wheel and codex on PATH (or configured) on this host. On the docker backend: the
image carries them, so one throwaway container of the image (no network, no capabilities,
read-only, removed at once) runs `claude --version` and `codex --version` (and finds the
engine's `command` runner of resolve's tests, which an older image lacks); that takes ~2 s on
Podman (container start plus two binary starts), cheap enough for a one-off command and the
only check that proves the binaries start in the image, which a label could not.

Which checks are required depends on the settings: with `backend = "docker"` an unreachable
engine or a missing image fails; with `auto` they are warnings (the bot falls back to local,
unisolated turns), unless podman is installed: then the backend line says the bot starts its
own engine (bot/engine_owned.py); with `local` the engine is only reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from bot.backend import (
    BackendKind,
    BackendUnavailable,
    EngineProbe,
    choose_backend,
    probe_engine,
    short_reason,
)
from bot.doctor_isolation import check_network, check_workspaces
from bot.engine_owned import engine_folder, wants_owned_engine
from bot.settings import Settings, load_settings
from bot.settings_sections import SettingsError
from container.docker_backend import connect

VERSION_TIMEOUT_S = 60.0  # the first start of a 400 MB binary from a cold disk can be slow


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
    references = check_references(settings)
    if references is not None:
        yield references
    yield check_platforms(settings)
    yield from check_slack(settings)
    from bot.discord.doctor import discord_checks  # late: it imports Check from here

    yield from discord_checks(settings)
    probe = probe_engine(settings, name=True)
    backend, kind = check_backend(settings, probe)
    yield backend
    yield check_engine(settings, probe)
    yield check_image(settings, probe)
    yield from check_runners(settings, kind, probe)
    if kind == "docker":
        yield from check_isolation(settings)
    yield check_database(settings)


def check_isolation(settings: Settings) -> Iterator[Check]:
    """The containers' network and the workspaces' owner (bot/doctor_isolation.py)."""
    isolated, text = check_network(settings)
    yield Check("network", isolated, text, required=False)
    for name, ok, said in check_workspaces(settings):
        yield Check(name, ok, said)


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


def check_references(settings: Settings) -> Check | None:
    """The reference opinions' keys (their base URLs were checked with the settings); None when
    no group has references. A missing key is not fatal: that reference is dropped and
    recorded at each ruling, the others still answer."""
    refs = [(name, ref) for name, _, _, g in settings.all_groups() for ref in g.references]
    if not refs:
        return None
    missing = [
        f"{name}/{r.name}: set {r.key_env}" for name, r in refs if not os.environ.get(r.key_env)
    ]
    if missing:
        return Check("references", False, "; ".join(missing), required=False)
    listed = ", ".join(f"{name}/{r.name} ({r.api}, {r.base_url})" for name, r in refs)
    return Check("references", True, f"ok ({listed})")


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


def check_slack(settings: Settings) -> Iterator[Check]:
    from bot.slack.doctor import slack_checks  # slack_sdk is only loaded when it is needed

    for name, ok, text in slack_checks(settings):
        yield Check(name, ok, text)


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


def check_claude(required: bool) -> Check:
    binary = claude_binary()
    if binary is None or not binary.is_file():
        return Check(
            "runner claude", False, "install claude-agent-sdk (it bundles Claude Code)", required
        )
    ok, version = _version(str(binary))
    if not ok:
        return Check("runner claude", False, f"reinstall claude-agent-sdk: {version}", required)
    return Check("runner claude", True, f"ok ({version}, {binary})", required)


def check_codex(settings: Settings, required: bool) -> Check:
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
    from rooms.store import Store
    from rooms.store.schema import LATEST

    store = await Store.open(str(path))  # opening applies any missing migration
    try:
        return await store.schema_version(), LATEST
    finally:
        await store.close()


def check_backend(settings: Settings, probe: EngineProbe) -> tuple[Check, BackendKind | None]:
    """The backend the bot would use and why; None when the docker backend cannot work."""
    try:
        choice = choose_backend(settings, lambda _: probe)
    except BackendUnavailable:
        return Check(
            "backend",
            False,
            f"docker (set by TRIBUNAL_BACKEND) cannot run: {probe.why_not()}: {probe.hint()}",
        ), None
    if choice.warning is not None and wants_owned_engine(settings, probe.reachable):
        sock = engine_folder(settings) / "podman.sock"
        text = (
            f"ok (docker on the bot's own Podman: {probe.why_not()}; podman is installed, so "
            f"the bot starts its service on {sock} and builds the image there)"
        )
        return Check("backend", True, text), "docker"
    if choice.warning is not None:
        text = (
            f"local (auto), so the turns run unisolated on this host: {probe.why_not()}; "
            f"to isolate them, {probe.hint()}"
        )
        return Check("backend", False, text, required=False), choice.kind
    return Check("backend", True, f"ok ({choice.kind}, {choice.reason})"), choice.kind


def check_engine(settings: Settings, probe: EngineProbe) -> Check:
    required = settings.backend == "docker"
    where = probe.where
    if not probe.reachable:
        if required:
            return Check(
                "engine",
                False,
                f"not reachable at {where} ({probe.error}): start Docker or Podman, or set "
                "DOCKER_HOST",
            )
        consequence = (
            "not needed with TRIBUNAL_BACKEND=local"
            if settings.backend == "local"
            else "turns would run unisolated with the local backend"
        )
        return Check("engine", False, f"not reachable at {where}: {consequence}", required=False)
    name = f"{probe.engine}, " if probe.engine else ""
    return Check("engine", True, f"ok ({name}API {probe.api_version} at {where})", required)


def check_image(settings: Settings, probe: EngineProbe) -> Check:
    image = settings.docker.image
    # Required only when the docker backend is asked for and the engine line did not fail yet.
    required = settings.backend == "docker" and probe.reachable
    if not probe.reachable:
        return Check("image", False, f"{image}: not checked (no engine)", required=False)
    if probe.image_id is None:
        if probe.image_error == "not found":
            what = f"{image} is missing on the engine: run `tribunal image build`"
        else:
            what = f"{image} cannot be looked up ({probe.image_error})"
        if settings.backend == "local":
            what += " (not needed with TRIBUNAL_BACKEND=local)"
        return Check("image", False, what, required)
    return Check("image", True, f"ok ({image}, {probe.image_id[:19]})", required)


def check_runners(settings: Settings, kind: BackendKind | None, probe: EngineProbe) -> list[Check]:
    """The runner binaries where the turns will run (see the module docstring)."""
    needs = {agent: agent in settings.agents_in_use() for agent in ("claude", "codex")}
    if kind == "local":
        return [check_claude(needs["claude"]), check_codex(settings, needs["codex"])]
    needs["command"] = True  # resolve's tests run on it; an image older than it lacks it
    if kind is None or probe.image_id is None:
        return [
            Check(f"runner {agent}", False, "not checked: no usable image", required=False)
            for agent in needs
        ]
    try:
        found = image_runner_versions(settings, probe.image_id)
    except Exception as exc:  # the engine failed the throwaway container
        reason = short_reason(exc)
        return [
            Check(f"runner {agent}", False, f"the image check failed: {reason}", required)
            for agent, required in needs.items()
        ]
    checks = []
    for agent, required in needs.items():
        ok, text = found.get(agent, (False, "no answer from the image check"))
        if ok:
            checks.append(Check(f"runner {agent}", True, f"ok ({text}, in the image)", required))
        else:
            fix = f"rebuild the image (`tribunal image build`): {text}"
            checks.append(Check(f"runner {agent}", False, fix, required))
    return checks


# Runs inside the image: each binary's --version, as JSON {agent: [ok, first line]}.
_VERSIONS_SCRIPT = """
import json, pathlib, shutil, subprocess, sys
timeout = float(sys.argv[1])
found = {}
try:
    import claude_agent_sdk
    claude = str(pathlib.Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude")
except ImportError:
    claude = None
for agent, binary in (("claude", claude), ("codex", shutil.which("codex"))):
    if binary is None:
        found[agent] = [False, "not in the image"]
        continue
    try:
        argv = [binary, "--version"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        lines = (done.stdout or done.stderr).strip().splitlines()
        first = lines[0] if lines else ""
        ok = done.returncode == 0
        found[agent] = [ok, first if ok else f"exited {done.returncode}: {first}"]
    except Exception as exc:
        found[agent] = [False, f"cannot run: {exc}"]
import importlib.util
command = importlib.util.find_spec("runners.command") is not None
found["command"] = [True, "runners.command"] if command else [False, "not in the image"]
print(json.dumps(found))
"""


def _last_json_line(container: Any, attempts: int = 10) -> dict[str, Any]:
    """The JSON the script printed last. Podman 4.3 may hand back a just-exited container's
    logs without their last lines, so an empty or cut answer is read again a few times."""
    for _ in range(attempts):
        output = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
        lines = output.strip().splitlines()
        try:
            answer = json.loads(lines[-1]) if lines else None
        except ValueError:
            answer = None
        if isinstance(answer, dict):
            return answer
        time.sleep(0.2)
    return {}


def image_runner_versions(settings: Settings, image_id: str) -> dict[str, tuple[bool, str]]:
    """`claude --version` and `codex --version` in a throwaway container of the image."""
    client = connect(settings.docker_host, timeout=int(VERSION_TIMEOUT_S) * 2 + 30)
    container = None
    try:
        container = client.containers.run(
            image_id,
            ["python3", "-c", _VERSIONS_SCRIPT, str(VERSION_TIMEOUT_S)],
            detach=True,
            labels={"tribunal.doctor": "1"},
            user="1000:1000",
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            tmpfs={"/tmp": "rw,size=64m,mode=1777", "/home/runner": "rw,size=64m,mode=1777"},
            mem_limit=settings.docker.mem_limit,
            pids_limit=settings.docker.pids_limit,
        )
        container.wait(timeout=VERSION_TIMEOUT_S * 2 + 10)
        answer = _last_json_line(container)
        return {agent: (bool(ok), str(text)) for agent, (ok, text) in answer.items()}
    finally:
        if container is not None:
            with contextlib.suppress(Exception):
                container.remove(force=True)
        client.close()
