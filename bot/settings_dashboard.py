"""The `[dashboard]` section: the operator's web view (bot/dashboard), off unless a port is set.

`token_sha256`: the SHA-256 (hex) of the operator's sign-in token. Only the hash is in the
settings: `python -m bot.dashboard.token` prints a new token and the line to put here, so a
leaked settings file signs nobody in. Approvers sign in without it, through the one-time link
`@tribunal dashboard` sends them in chat.

`host`: loopback unless set otherwise. With `port` equal to TRIBUNAL_HTTP_PORT and Slack in HTTP
mode, the dashboard is served by Slack's listener instead, beside /slack/events (which Slack must
reach, so it listens on every address: `host` does not apply). Exposed beyond loopback, the
dashboard must sit behind a TLS proxy (`behind_tls = true` says it does): `tribunal doctor` warns
otherwise, because a session cookie sent in clear text is a session anyone on the path can take.
"""

from __future__ import annotations

import ipaddress
import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


class DashboardSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    port: int | None = Field(None, ge=0, le=65535)  # None: no dashboard; 0: any free port
    host: str = "127.0.0.1"
    token_sha256: str | None = None
    # The address people open (the one-time links in chat use it); unset: http://host:port.
    public_url: str | None = None
    behind_tls: bool = False
    session_hours: float = Field(12.0, gt=0, le=24 * 30)
    link_minutes: float = Field(15.0, gt=0, le=24 * 60)

    @field_validator("token_sha256")
    @classmethod
    def _a_hash(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().lower()
        if not _SHA256_HEX.match(value):
            raise ValueError(
                "must be the SHA-256 of the token as 64 hex digits, not the token itself "
                "(python -m bot.dashboard.token prints both)"
            )
        return value

    @property
    def enabled(self) -> bool:
        return self.port is not None

    @property
    def loopback(self) -> bool:
        """True when only this machine can reach it (on its own listener)."""
        return is_loopback(self.host)

    def exposure_warning(self, host: str | None = None) -> str | None:
        """What `doctor` says when the dashboard is reachable from elsewhere without TLS.
        `host`: where it really listens, when that is not `host` (Slack's listener, when it
        shares TRIBUNAL_HTTP_PORT)."""
        host = host or self.host
        if not self.enabled or is_loopback(host) or self.behind_tls:
            return None
        return (
            f"the dashboard listens on {host}:{self.port}, beyond this machine, without "
            "TLS in front: sign-in tokens and session cookies cross the network in clear text. "
            "Put a TLS proxy in front and set [dashboard] behind_tls = true, or bind it to "
            "127.0.0.1"
        )


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
