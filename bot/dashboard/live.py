"""Server-sent events: open pages learn that something changed and fetch their parts again.

One watcher per server polls the store's change mark (rooms/store/dashboard_reads.py
`change_mark`: a few MAX/COUNT lookups) every `interval_s`, only while a page listens, and puts
one "change" on every listener's queue when it moved. So fifty open pages cost the store one
small query per interval, not fifty; each page then asks for the parts it shows (HTMX).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiohttp import web

from rooms.store import Store

log = logging.getLogger(__name__)
KEEPALIVE_S = 15.0


class Changes:
    def __init__(self, store: Store, interval_s: float = 0.5) -> None:
        self.store = store
        self.interval_s = interval_s
        self._listeners: set[asyncio.Queue[str]] = set()
        self._watcher: asyncio.Task[None] | None = None
        self._mark: tuple[Any, ...] | None = None

    @property
    def listeners(self) -> int:
        return len(self._listeners)

    def _ensure_watching(self) -> None:
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.create_task(self._watch(), name="dashboard-changes")

    async def _watch(self) -> None:
        while self._listeners:
            mark: tuple[Any, ...] | None
            try:
                mark = await self.store.change_mark()
            except Exception:  # a store hiccup: /healthz says so; the pages keep what they show
                log.exception("dashboard: reading the change mark failed")
                mark = self._mark
            if mark != self._mark:
                self._mark = mark
                for queue in list(self._listeners):
                    if queue.qsize() < 2:  # a slow page gets one refresh, not a backlog
                        queue.put_nowait("change")
            await asyncio.sleep(self.interval_s)

    async def stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        queue: asyncio.Queue[str] = asyncio.Queue()
        self._listeners.add(queue)
        self._ensure_watching()
        try:
            await response.write(b"retry: 2000\n\n")
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                except TimeoutError:
                    await response.write(b": keepalive\n\n")
                    continue
                await response.write(f"event: {event}\ndata: {event}\n\n".encode())
        except ConnectionResetError:  # the page was closed
            pass
        finally:
            self._listeners.discard(queue)
        return response

    async def close(self) -> None:
        self._listeners.clear()
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher
