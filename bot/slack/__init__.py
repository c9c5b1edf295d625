"""Tribunal in Slack: threads, personas, Block Kit cards and buttons, Socket Mode and HTTP.

Importing this package declares the platform (bot/platforms.py does): the factory builds the
adapter from the settings, or returns None when SLACK_BOT_TOKEN is not set. Only the declaration
is here; the adapter and its checks load when they are used (bot/adapter.py says why).
"""

from __future__ import annotations

from bot.adapter import PlatformSetting, PlatformSpec, register

register(
    PlatformSpec(
        "slack",
        factory="bot.slack.factory:make_adapter",
        settings=(
            PlatformSetting("bot_token", "SLACK_BOT_TOKEN", secret=True),
            PlatformSetting("app_token", "SLACK_APP_TOKEN", secret=True),
            PlatformSetting("signing_secret", "SLACK_SIGNING_SECRET", secret=True),
            PlatformSetting("api_url", "SLACK_API_URL"),
        ),
        token="bot_token",
        doctor="bot.slack.doctor:doctor_checks",
        status="bot.slack.doctor:platform_status",
        manifest="bot/slack/manifest.yaml",
        title="Slack",
        # The `user` of an event: U… (or W… on Enterprise Grid), upper-case letters and digits.
        approver=(r"[UW][A-Z0-9]+", "a Slack user id such as U024BE7LH (U… or W…)"),
    )
)
