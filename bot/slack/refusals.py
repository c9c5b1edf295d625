"""When Slack refuses one of our tokens: one line a person can act on, never the token itself.

Slack answers a refused token with `ok: false` and an error code, at start (auth.test for the
bot token, apps.connections.open for the app token) or at any call later (a token revoked or
an app disabled while the bot runs). Those codes cannot heal by retrying, so the adapter stops
`serve` with a settings error (exit 78) instead of running deaf or posting nothing for ever.
"""

from __future__ import annotations

from slack_sdk.errors import SlackApiError

from bot.settings_sections import SettingsError

# Slack's answers that mean "this token will not work", whatever is retried.
REFUSED = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "token_expired",
        "account_inactive",
        "not_allowed_token_type",
        "team_access_not_granted",
    }
)

BOT_TOKEN = "SLACK_BOT_TOKEN"
APP_TOKEN = "SLACK_APP_TOKEN"

_WHERE = {
    BOT_TOKEN: "the app's OAuth & Permissions page (reinstall the app to get a new one)",
    APP_TOKEN: "the app's Basic Information page → App-Level Tokens (scope connections:write)",
}


def refusal_code(exc: BaseException) -> str | None:
    """Slack's error code when `exc` is a refused token, else None."""
    if not isinstance(exc, SlackApiError):
        return None
    response = getattr(exc, "response", None)
    try:
        code = response.get("error") if response is not None else None
    except (AttributeError, TypeError):  # a response that is not a JSON object
        return None
    return code if isinstance(code, str) and code in REFUSED else None


class TokenRefused(SettingsError):
    """Slack refused `variable`'s token (`code`): at start, or while the bot ran."""

    def __init__(self, variable: str, code: str, *, running: bool = False) -> None:
        self.variable = variable
        self.code = code
        when = "while the bot ran; its work is kept and goes on after a restart" if running else ""
        line = (
            f"settings: slack: Slack refused {variable} ({code}{'; ' + when if when else ''}): "
            f"get a valid one from {_WHERE[variable]}, set it again, check with `tribunal doctor`"
        )
        super().__init__([line])
