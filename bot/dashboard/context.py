"""What every dashboard handler reads: the engine's app, the settings, the dashboard's own store
connection, the signing key, the live changes and the links (`request.app[DASHBOARD]`), and the
signed-in session the middleware put on the request (`session_of`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from bot.app import App
from bot.dashboard.links import DashboardLinks
from bot.dashboard.live import Changes, PartCache
from bot.dashboard.sessions import Session
from bot.settings import Settings
from rooms.store import Store


@dataclass
class Dashboard:
    """What every handler reads: `request.app[DASHBOARD]`."""

    app: App
    settings: Settings
    store: Store  # the dashboard's own connection to the same database (reads, links, audit)
    key: bytes
    changes: Changes
    links: DashboardLinks
    clock: Callable[[], float] = time.time
    parts: PartCache = field(default_factory=PartCache)
    records_dir: Path = field(default_factory=Path)

    def now(self) -> float:
        return self.clock()

    @property
    def secure_cookie(self) -> bool:
        return self.settings.dashboard.behind_tls


DASHBOARD = web.AppKey("dashboard", Dashboard)
SESSION = web.RequestKey("session", Session)


def session_of(request: web.Request) -> Session:
    return request[SESSION]  # set by the session middleware for every non-public path
