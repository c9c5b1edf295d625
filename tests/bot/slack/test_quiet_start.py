"""A Slack start without noise (issue 27 #6): bolt's "`token` will be unused" warning, which it
printed on every start because it reads SLACK_BOT_TOKEN itself beside the client the adapter
gives it, is gone; bolt's other warnings still pass."""

from __future__ import annotations

import logging

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.adapter import SlackAdapter


def test_a_slack_adapter_starts_without_the_unused_token_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-quiet-start")
    with caplog.at_level(logging.DEBUG):
        SlackAdapter(AsyncWebClient(token="xoxb-quiet-start"), mode="http", signing_secret="s")
        logging.getLogger("slack_bolt.AsyncApp").warning("another bolt warning")
    messages = [r.getMessage() for r in caplog.records]
    assert not any("will be unused" in m for m in messages), messages
    assert "another bolt warning" in messages
