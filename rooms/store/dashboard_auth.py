"""The dashboard's part of the store that it writes: one-time sign-in links and the record of
every action taken on it (bot/dashboard).

A link is kept as the SHA-256 of its secret, never the secret (someone who reads the database
cannot sign in with it), and is spent by one conditional UPDATE: of two uses at once, one wins.
Portable SQL (SQLite and PostgreSQL).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from rooms.store.connection import StoreBase


@dataclass(frozen=True)
class LinkIdentity:
    """Who a spent link signs in as: the person who asked for it in chat, as the platform
    named them (their user id and the platform groups they were in)."""

    platform: str
    user: str
    roles: frozenset[str]


@dataclass(frozen=True)
class ActionRow:
    id: int
    at: float
    who: str
    action: str
    task_id: int | None
    detail: str
    outcome: str


class DashboardAuthStore(StoreBase):
    async def add_dashboard_link(
        self,
        secret_hash: str,
        identity: LinkIdentity,
        now: float,
        expires_at: float,
    ) -> None:
        await self._write(
            "INSERT INTO dashboard_links (secret_hash, platform, user_id, roles, created_at,"
            " expires_at) VALUES (?,?,?,?,?,?)",
            (
                secret_hash,
                identity.platform,
                identity.user,
                json.dumps(sorted(identity.roles)),
                now,
                expires_at,
            ),
        )

    async def spend_dashboard_link(self, secret_hash: str, now: float) -> LinkIdentity | None:
        """The identity of an unused, unexpired link, now spent; None for any other (unknown,
        used, expired): a second use of the same link finds it spent."""
        rows = await self._write(
            "UPDATE dashboard_links SET used_at=? WHERE secret_hash=? AND used_at IS NULL"
            " AND expires_at > ? RETURNING platform, user_id, roles",
            (now, secret_hash, now),
        )
        if not rows:
            return None
        platform, user, roles = rows[0]
        return LinkIdentity(str(platform), str(user), frozenset(json.loads(roles)))

    async def record_dashboard_action(
        self,
        *,
        at: float,
        who: str,
        action: str,
        task_id: int | None,
        detail: str,
        outcome: str,
    ) -> None:
        await self._write(
            "INSERT INTO dashboard_actions (at, who, action, task_id, detail, outcome)"
            " VALUES (?,?,?,?,?,?)",
            (at, who, action, task_id, detail, outcome),
        )

    async def dashboard_actions(
        self, task_id: int | None = None, limit: int = 100
    ) -> list[ActionRow]:
        where, args = ("WHERE task_id=?", (task_id,)) if task_id is not None else ("", ())
        rows = await self._rows(
            "SELECT id, at, who, action, task_id, detail, outcome FROM dashboard_actions"
            f" {where} ORDER BY id DESC LIMIT ?",
            (*args, limit),
        )
        return [ActionRow(*r) for r in rows]
