"""One-time sign-in links (`@tribunal dashboard` in chat): rooms.base.ports.SignInLinks.

The link carries a random secret; the store keeps its SHA-256 with the person's platform
identity, and spends it on first use (rooms/store/dashboard_auth.py). Opening the link (GET)
only shows a button: the sign-in is its POST, so a link preview or a prefetch spends nothing.
A link is handed only where the platform shows a reply to that person alone: Slack (an
ephemeral message) and the console (one person). On Discord a reply to a message is public,
and a link shown to the channel could be used by whoever clicks first.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.dashboard.token import digest, new_secret
from rooms.base.model import RoomRef
from rooms.store import Store
from rooms.store.dashboard_auth import LinkIdentity

PRIVATE_REPLIES = frozenset({"slack", "console"})
LINK_PATH = "/signin/link"


class DashboardLinks:
    def __init__(
        self, store: Store, base_url: str, minutes: float, clock: Callable[[], float]
    ) -> None:
        self.store = store
        self.base_url = base_url.rstrip("/")
        self.minutes = minutes
        self.clock = clock

    async def link_for(self, room: RoomRef, user: str, roles: frozenset[str]) -> str | None:
        if room.platform not in PRIVATE_REPLIES:
            return None
        secret = new_secret()
        now = self.clock()
        await self.store.add_dashboard_link(
            digest(secret), LinkIdentity(room.platform, user, roles), now, now + self.minutes * 60
        )
        return f"{self.base_url}{LINK_PATH}?s={secret}"
