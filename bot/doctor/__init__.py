"""`tribunal doctor`: one line per check, "ok" or what to do; exit 0 when every required check
passes, 1 otherwise.

Checks: settings; model credentials for the agent types in use; chat platform tokens (Slack's
against the Web API: auth.test and the scopes, bot/slack/doctor.py; for Discord also the token
itself, the message-content intent and the bot's permissions in each registered channel,
bot/discord/doctor.py); the backend the bot would use and why; the container engine; the runner
image; the runner binaries; on the docker backend, the containers' network and the workspaces'
owner (bot/doctor_isolation.py); the database.

The checks of the settings' accounts and the database are in bot/doctor/config.py; those of the
backend, the engine, the image and the runner binaries (and which of them are required) in
bot/doctor/engine.py, on the engine the bot really uses (bot/doctor/bots_engine.py); with several
`[docker] engines`, each one is checked too (bot/doctor/engines.py); each line is a
bot/doctor/check.py `Check`. When the dashboard is on, whether it is exposed without TLS.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import bot.platforms  # noqa: F401  (declares the platforms whose settings and checks run here)
from bot.doctor.bots_engine import engine_to_check
from bot.doctor.check import Check
from bot.doctor.config import (
    check_credentials,
    check_database,
    check_each_platform,
    check_platforms,
    check_references,
)
from bot.doctor.engine import check_backend, check_engine, check_image, check_runners
from bot.doctor.engines import check_engines
from bot.doctor_isolation import check_network, check_workspaces
from bot.settings import Settings, load_settings
from bot.settings_dashboard import is_loopback
from bot.settings_sections import SettingsError
from bot.slack.adapter import HTTP_HOST as SLACK_HTTP_HOST

__all__ = ["Check", "diagnose", "run_doctor"]


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
    yield from check_each_platform(settings)
    with engine_to_check(settings) as found:
        backend, kind = check_backend(found)
        yield backend
        yield check_engine(found)
        yield check_image(found)
        yield from check_runners(found.settings, kind, found.probe)
    if settings.docker.engines and settings.backend != "local":
        yield from check_engines(settings)  # each engine of `[docker] engines`
    if kind == "docker":
        yield from check_isolation(settings)
    yield check_database(settings)
    dashboard = check_dashboard(settings)
    if dashboard is not None:
        yield dashboard


def check_dashboard(settings: Settings) -> Check | None:
    """The dashboard's exposure (bot/settings_dashboard.py): a warning, not a failure, when it
    listens beyond loopback with no TLS in front; nothing when it is off."""
    if not settings.dashboard.enabled:
        return None
    # On TRIBUNAL_HTTP_PORT it shares Slack's listener (bot/slack/adapter.py), on every address.
    shared = settings.dashboard.port == settings.http_port
    host = SLACK_HTTP_HOST if shared else settings.dashboard.host
    warning = settings.dashboard.exposure_warning(host)
    if warning is not None:
        return Check("dashboard", False, f"warning: {warning}", required=False)
    where = "loopback only" if is_loopback(host) else "behind TLS"
    where = f"{host}:{settings.dashboard.port}, {where}"
    return Check("dashboard", True, f"ok ({where})", required=False)


def check_isolation(settings: Settings) -> Iterator[Check]:
    """The containers' network and the workspaces' owner (bot/doctor_isolation.py)."""
    isolated, text = check_network(settings)
    yield Check("network", isolated, text, required=False)
    for name, ok, said in check_workspaces(settings):
        yield Check(name, ok, said)


def _describe(settings: Settings) -> str:
    groups = 1 + len(settings.groups)
    return f"{groups} group{'s' if groups > 1 else ''}, backend {settings.backend}"
