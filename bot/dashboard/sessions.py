"""Signed session cookies with an expiry, and the CSRF token of each session.

A cookie is `base64url(JSON payload).base64url(HMAC-SHA256(key, payload))`: the server keeps no
session table, and a cookie whose payload was changed, whose signature was made with another key,
or whose expiry has passed is refused. The key is random, kept in the data folder (0600) so that
sessions survive a restart; deleting the file signs everyone out.

The CSRF token is an HMAC of the session's id under the same key: every form and HTMX request
sends it in a header or field, and a request from another site (which can make the browser send
the cookie, but cannot read the page) cannot know it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

COOKIE = "tribunal_session"
KEY_FILE = "dashboard.key"


@dataclass(frozen=True)
class Session:
    """Who is signed in. `operator`: signed in with the token (sees every group, may stop and
    call the arbiter anywhere, answers nothing: an answer is a person's, on their platform).
    Otherwise a person of `platform`, with the platform groups (`roles`) they were in when they
    asked for the link: the groups' approver rules decide what they may see and answer."""

    id: str
    operator: bool
    platform: str
    user: str
    roles: frozenset[str]
    expires_at: float

    @property
    def who(self) -> str:
        """How the actions record this person."""
        return "operator (token)" if self.operator else f"{self.platform}:{self.user}"


def load_key(data: Path) -> bytes:
    """The signing key in `data`/dashboard.key, made (random, 0600) when missing."""
    path = data / KEY_FILE
    try:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    except FileNotFoundError:
        pass
    key = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()


def new_session(
    key: bytes,
    *,
    operator: bool,
    platform: str = "",
    user: str = "",
    roles: frozenset[str] = frozenset(),
    now: float,
    hours: float,
) -> tuple[Session, str]:
    """A new session and its cookie value."""
    session = Session(
        id=secrets.token_urlsafe(16),
        operator=operator,
        platform=platform,
        user=user,
        roles=roles,
        expires_at=now + hours * 3600,
    )
    payload = {
        "id": session.id,
        "op": operator,
        "pf": platform,
        "u": user,
        "r": sorted(roles),
        "exp": session.expires_at,
    }
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return session, f"{_b64(body)}.{_b64(_mac(key, body))}"


def read_session(key: bytes, cookie: str | None, now: float) -> Session | None:
    """The session of a cookie that this server signed and that has not expired; else None."""
    if not cookie or cookie.count(".") != 1:
        return None
    body_text, mac_text = cookie.split(".")
    try:
        body, mac = _unb64(body_text), _unb64(mac_text)
    except (binascii.Error, ValueError):
        return None
    if not hmac.compare_digest(mac, _mac(key, body)):
        return None
    try:
        payload = json.loads(body)
        session = Session(
            id=str(payload["id"]),
            operator=bool(payload["op"]),
            platform=str(payload["pf"]),
            user=str(payload["u"]),
            roles=frozenset(str(r) for r in payload["r"]),
            expires_at=float(payload["exp"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
    return session if session.expires_at > now else None


def csrf_token(key: bytes, session: Session) -> str:
    return _b64(_mac(key, f"csrf:{session.id}".encode()))


def csrf_ok(key: bytes, session: Session, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(csrf_token(key, session), given or "")
