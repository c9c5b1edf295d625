"""Tribunal in Slack: threads, personas, Block Kit cards and buttons, Socket Mode and HTTP.

Importing this package registers the Slack adapter factory (bot/platforms.py does); the factory
builds the adapter from the settings, or returns None when SLACK_BOT_TOKEN is not set.
"""

from __future__ import annotations

from bot.adapter import register
from bot.slack.adapter import SlackAdapter, make_client
from bot.slack.factory import make_adapter

register("slack", make_adapter)

__all__ = ["SlackAdapter", "make_adapter", "make_client"]
