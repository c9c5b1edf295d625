"""Settings → the Slack adapter: Socket Mode with an app token (the default), else HTTP mode
with the signing secret on TRIBUNAL_HTTP_PORT; neither is a settings error naming both."""

from __future__ import annotations

from bot.settings import Settings
from bot.settings_sections import SettingsError
from bot.slack.adapter import SlackAdapter, make_client


def make_adapter(settings: Settings) -> SlackAdapter | None:
    if settings.slack_bot_token is None:
        return None
    client = make_client(settings.slack_bot_token.get_secret_value(), settings.slack_api_url)
    if settings.slack_app_token is not None:
        return SlackAdapter(
            client, mode="socket", app_token=settings.slack_app_token.get_secret_value()
        )
    if settings.slack_signing_secret is not None and settings.http_port is not None:
        return SlackAdapter(
            client,
            mode="http",
            signing_secret=settings.slack_signing_secret.get_secret_value(),
            http_port=settings.http_port,
        )
    raise SettingsError(
        [
            "settings: slack: SLACK_BOT_TOKEN is set, but neither SLACK_APP_TOKEN (Socket Mode) "
            "nor SLACK_SIGNING_SECRET with TRIBUNAL_HTTP_PORT (HTTP mode)"
        ]
    )
