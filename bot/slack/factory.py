"""Settings → the Slack adapter: Socket Mode with an app token (the default), else HTTP mode
with the signing secret on TRIBUNAL_HTTP_PORT; neither is a settings error naming both."""

from __future__ import annotations

from bot.settings import Settings
from bot.settings_sections import SettingsError
from bot.slack.adapter import SlackAdapter, make_client


def make_adapter(settings: Settings) -> SlackAdapter | None:
    token = settings.platform_value("slack", "bot_token")
    if token is None:
        return None
    client = make_client(token, settings.platform_value("slack", "api_url"))
    app_token = settings.platform_value("slack", "app_token")
    if app_token is not None:
        return SlackAdapter(client, mode="socket", app_token=app_token)
    signing_secret = settings.platform_value("slack", "signing_secret")
    if signing_secret is not None and settings.http_port is not None:
        return SlackAdapter(
            client, mode="http", signing_secret=signing_secret, http_port=settings.http_port
        )
    raise SettingsError(
        [
            "settings: slack: SLACK_BOT_TOKEN is set, but neither SLACK_APP_TOKEN (Socket Mode) "
            "nor SLACK_SIGNING_SECRET with TRIBUNAL_HTTP_PORT (HTTP mode)"
        ]
    )
