"""The Slack app manifest (`manifest.yaml` beside this file): what the bot asks Slack for.

The file is YAML in its JSON form (every JSON document is YAML), so Slack's "create an app from
a manifest" takes it as it is and we read it with the standard library. It is the one list of
the bot scopes and events the adapter uses; `tribunal doctor` names the scopes a token lacks.

Why each scope: `app_mentions:read` (the mention that opens a task), `channels:history` /
`groups:history` (thread replies in public / private channels, and reading a thread back to
recognise a post made before a crash), `chat:write` (posts, edits, ephemeral refusals),
`chat:write.customize` (each role's name and icon), `files:write` (a long output as a file),
`users:read` (people by their display name in Tribunal's posts, not by id).
The app-level token (Socket Mode) needs `connections:write`; Slack sets that one when the token
is created, not in the manifest.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

APP_TOKEN_SCOPE = "connections:write"


@cache
def manifest() -> dict[str, Any]:
    text = resources.files("bot.slack").joinpath("manifest.yaml").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def bot_scopes() -> tuple[str, ...]:
    return tuple(manifest()["oauth_config"]["scopes"]["bot"])


def missing_scopes(granted: str | None) -> list[str]:
    """The manifest's bot scopes not in `granted` (the `x-oauth-scopes` header of a call)."""
    have = {s.strip() for s in (granted or "").split(",") if s.strip()}
    return [s for s in bot_scopes() if s not in have]
