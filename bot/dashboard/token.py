"""The operator's sign-in token: only its SHA-256 is kept (settings, `[dashboard] token_sha256`).

`python -m bot.dashboard.token` prints a new random token and the settings line with its hash.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sys


def digest(secret: str) -> str:
    """The hex SHA-256 of a token or link secret (UTF-8)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def token_matches(given: str, expected_sha256: str | None) -> bool:
    """Compared in constant time; never true when no token is configured or none was given."""
    if not expected_sha256 or not given:
        return False
    return hmac.compare_digest(digest(given), expected_sha256)


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def main() -> int:
    token = new_secret()
    sys.stdout.write(
        f"token (give it to the operator; it is not stored anywhere): {token}\n"
        f'tribunal.toml:\n[dashboard]\ntoken_sha256 = "{digest(token)}"\n'
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
