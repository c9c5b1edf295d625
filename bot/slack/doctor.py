"""`tribunal doctor` for Slack: the bot token answers auth.test and holds every scope the
manifest asks for (Slack lists a token's scopes in the `x-oauth-scopes` header of each answer);
the app token (Socket Mode) opens a connection. Uses the settings' SLACK_API_URL, like the bot.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.doctor.check import Check
from bot.settings import Settings
from bot.slack.adapter import DEFAULT_API_URL
from bot.slack.manifest import APP_TOKEN_SCOPE, missing_scopes

TIMEOUT_S = 10


def doctor_checks(settings: Settings) -> Iterator[Check]:
    """The checks as `tribunal doctor` lists them (bot/slack/__init__.py declares them)."""
    for name, ok, text in slack_checks(settings):
        yield Check(name, ok, text)


def platform_status(settings: Settings) -> tuple[str | None, str | None]:
    """With a bot token: the mode the adapter will run in, or what it lacks to run in one."""
    if settings.platform_value("slack", "app_token") is not None:
        return "slack (Socket Mode)", None
    if settings.platform_value("slack", "signing_secret") is not None and settings.http_port:
        return f"slack (HTTP mode on port {settings.http_port})", None
    return None, (
        "set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET and TRIBUNAL_HTTP_PORT "
        "(HTTP mode)"
    )


def slack_checks(settings: Settings) -> Iterator[tuple[str, bool, str]]:
    """(name, ok, text) per check; nothing when no Slack bot token is set."""
    token = settings.platform_value("slack", "bot_token")
    if token is None:
        return
    base = (settings.platform_value("slack", "api_url") or DEFAULT_API_URL).rstrip("/") + "/"
    bot = WebClient(token, base_url=base, timeout=TIMEOUT_S)
    ok, answer = _call(bot, "auth.test")
    if not ok:
        yield "slack bot token", False, f"auth.test at {base} failed: {answer}"
    else:
        data: dict[str, Any] = answer
        who = f"{data.get('user', '?')} ({data.get('user_id', '?')}) in team {data.get('team_id')}"
        headers = {k.lower(): v for k, v in (data.get("_headers") or {}).items()}
        granted = headers.get("x-oauth-scopes")
        missing = missing_scopes(granted)
        if granted is None:
            yield "slack bot token", True, f"ok ({who}; Slack did not list its scopes)"
        elif missing:
            yield (
                "slack bot token",
                False,
                f"{who} lacks the scopes {', '.join(missing)}: add them under OAuth & Permissions "
                "(or create the app from bot/slack/manifest.yaml) and reinstall the app",
            )
        else:
            yield "slack bot token", True, f"ok ({who}, every scope the manifest asks for)"
    app_token = settings.platform_value("slack", "app_token")
    if app_token is not None:
        app = WebClient(app_token, base_url=base, timeout=TIMEOUT_S)
        ok, answer = _call(app, "apps.connections.open")
        if ok:
            yield "slack app token", True, "ok (Socket Mode connections open)"
        else:
            yield (
                "slack app token",
                False,
                f"apps.connections.open failed: {answer} (an app-level token with "
                f"{APP_TOKEN_SCOPE}, and Socket Mode enabled?)",
            )


def _call(client: WebClient, method: str) -> tuple[bool, Any]:
    try:
        response = client.api_call(method)
    except SlackApiError as exc:
        return False, str(exc.response.get("error") or exc.response.status_code)
    except (SlackClientError, OSError) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return True, {**response.data, "_headers": dict(response.headers)}  # type: ignore[dict-item]
