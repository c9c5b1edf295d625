"""The app manifest asks Slack for everything the adapter uses, and Socket Mode."""

from __future__ import annotations

import pytest

from bot.slack.manifest import bot_scopes, manifest, missing_scopes


@pytest.mark.parametrize(
    ("used_for", "scope"),
    [
        ("the mention that opens a task (app_mention)", "app_mentions:read"),
        ("thread replies in public channels, reading a thread back", "channels:history"),
        ("thread replies in private channels", "groups:history"),
        ("chat.postMessage, chat.update, chat.postEphemeral", "chat:write"),
        ("username and icon_emoji per role", "chat:write.customize"),
        ("files.getUploadURLExternal / completeUploadExternal", "files:write"),
        ("users.info: people by name in Tribunal's posts", "users:read"),
    ],
)
def test_every_scope_the_adapter_uses_is_asked_for(used_for: str, scope: str) -> None:
    assert scope in bot_scopes(), used_for


def test_events_interactivity_and_socket_mode() -> None:
    assert set(manifest()["settings"]["event_subscriptions"]["bot_events"]) == {
        "app_mention",
        "message.channels",
        "message.groups",
    }
    settings = manifest()["settings"]
    assert settings["socket_mode_enabled"] is True
    assert settings["interactivity"]["is_enabled"] is True
    assert manifest()["features"]["bot_user"]["display_name"] == "tribunal"


@pytest.mark.parametrize(
    ("granted", "missing"),
    [
        (None, list(bot_scopes())),
        ("", list(bot_scopes())),
        (",".join(bot_scopes()), []),
        (" , ".join([*bot_scopes(), "users:read.email"]), []),
        (
            "chat:write,app_mentions:read",
            [s for s in bot_scopes() if s not in ("chat:write", "app_mentions:read")],
        ),
    ],
)
def test_missing_scopes(granted: str | None, missing: list[str]) -> None:
    assert missing_scopes(granted) == missing
