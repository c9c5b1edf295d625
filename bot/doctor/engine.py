"""`tribunal doctor`'s backend, container engine, runner image and runner binary checks.

The backend is the one the bot would use, and why (bot/backend.py: `auto` picks docker when the
engine answers and has the image); the container engine answers a ping (name, version, API
version); the runner image is present, with its id.

The runner binaries are checked where the turns will run. On the local backend: claude from the
claude_agent_sdk wheel and codex on PATH (or configured) on this host. On the docker backend: the
image carries them, so one throwaway container of the image (no network, no capabilities,
read-only, removed at once) runs `claude --version` and `codex --version` (and finds the
engine's `command` runner of resolve's tests, which an older image lacks); that takes ~2 s on
Podman (container start plus two binary starts), cheap enough for a one-off command and the
only check that proves the binaries start in the image, which a label could not.

The engine is the one the bot would really use (bot/doctor/bots_engine.py): DOCKER_HOST's, else
with `auto` the bot's own Podman (running, or started for the check as the bot starts it), on
which one probe container must run; the lines agree with each other: an engine that cannot run
a container means local turns, and no image or runner check in it.

Which checks are required depends on the settings: with `backend = "docker"` an unreachable
engine, one that cannot run a container, or a missing image fails; with `auto` they are warnings
(the bot falls back to local, unisolated turns, or builds the image on its own engine at its
start); with `local` the engine is only reported.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from bot.backend import (
    BackendKind,
    BackendUnavailable,
    EngineProbe,
    choose_backend,
    engine_endpoints,
    short_reason,
)
from bot.doctor.bots_engine import EngineFound
from bot.doctor.check import Check
from bot.settings import Settings

VERSION_TIMEOUT_S = 60.0  # the first start of a 400 MB binary from a cold disk can be slow


def check_backend(found: EngineFound) -> tuple[Check, BackendKind | None]:
    """The backend the bot would use and why; None when the docker backend cannot work."""
    settings, probe = found.settings, found.probe
    unisolated = "local (auto), so the turns run unisolated on this host"
    if found.cannot_run is not None and settings.backend != "local":
        why = f"containers cannot run on this machine ({found.cannot_run})"
        if settings.backend == "docker":
            return Check(
                "backend", False, f"docker (set by TRIBUNAL_BACKEND) cannot run: {why}"
            ), None
        text = f"{unisolated}: {why}; set TRIBUNAL_BACKEND=local to run them so knowingly"
        return Check("backend", False, text, required=False), "local"
    if found.owned_error is not None:
        text = (
            f"{unisolated}: {probe.why_not()}, and the bot's own Podman could not be made "
            f"ready: {found.owned_error}"
        )
        return Check("backend", False, text, required=False), "local"
    try:
        choice = choose_backend(settings, lambda _: probe)
    except BackendUnavailable:
        return Check(
            "backend",
            False,
            f"docker (set by TRIBUNAL_BACKEND) cannot run: {probe.why_not()}: {probe.hint()}",
        ), None
    if found.owned is not None:
        where = f"the bot's own Podman at {probe.where} ({found.owned})"
        if probe.image_id is None:
            text = f"ok (docker on {where}; the bot builds the image {probe.image} at its start)"
        else:
            text = f"ok (docker on {where}, which has the image {probe.image})"
        return Check("backend", True, text), "docker"
    if choice.warning is not None:
        text = f"{unisolated}: {probe.why_not()}; to isolate them, {probe.hint()}"
        return Check("backend", False, text, required=False), choice.kind
    return Check("backend", True, f"ok ({choice.kind}, {choice.reason})"), choice.kind


def check_engine(found: EngineFound) -> Check:
    settings, probe = found.settings, found.probe
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
    if found.cannot_run is not None:
        text = f"{name}API {probe.api_version} at {where} answers, but cannot run a container"
        return Check("engine", False, f"{text}: {found.cannot_run}", required)
    ran = "" if settings.backend == "local" else "; a probe container ran"
    return Check("engine", True, f"ok ({name}API {probe.api_version} at {where}{ran})", required)


def check_image(found: EngineFound) -> Check:
    settings, probe = found.settings, found.probe
    image = settings.docker.image
    # Required only when the docker backend is asked for and the engine line did not fail yet.
    required = settings.backend == "docker" and probe.reachable and found.cannot_run is None
    if not probe.reachable:
        return Check("image", False, f"{image}: not checked (no engine)", required=False)
    if found.cannot_run is not None:
        return Check("image", False, f"{image}: not checked (no container runs)", required=False)
    if probe.image_id is None:
        if probe.image_error == "not found" and found.owned is not None:
            what = f"{image} is missing on the bot's own engine: the bot builds it at its start"
            return Check("image", False, what, required=False)
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
    client = engine_endpoints(settings)[0].connect(timeout=int(VERSION_TIMEOUT_S) * 2 + 30)
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
