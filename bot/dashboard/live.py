"""Server-sent events: open pages learn that something changed and fetch their parts again.

One watcher per server polls the store's change mark (rooms/store/dashboard_reads.py
`change_mark`: a few index lookups) every `interval_s`, only while a page listens, and puts one
"change" on every listener's queue when it moved. So fifty open pages cost the store one small
query per interval, not fifty; each page then asks for the parts it shows (HTMX), and the tasks
rows, the same for every viewer of the same groups, are rendered once per change for all of
them (`PartCache`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from rooms.base.model import Outbound
from rooms.store import Store

log = logging.getLogger(__name__)
KEEPALIVE_S = 15.0


PROGRESS = "⏳"  # how a progress message begins (rooms/core/progress.py)


class ProgressLines:
    """Each room's latest progress line, as the engine sends it to the chat (a progress
    message is delivered straight to the platform, not stored): watched on the Router, forgotten
    when the turn's final edit goes. `version` moves with every change, for the live pages."""

    def __init__(self) -> None:
        self.lines: dict[str, str] = {}
        self.version = 0

    def __call__(self, message: Outbound) -> None:
        if message.outbox_id or message.persona == "tribunal":
            return  # posts from the outbox and the bot's own voice are not progress
        key = message.room.key
        if message.final:
            if self.lines.pop(key, None) is not None:
                self.version += 1
        elif message.text.startswith(PROGRESS):
            # "⏳ owner is working (turn 3): running pytest": the page names the actor already.
            line = message.text.removeprefix(PROGRESS).strip().split("): ", 1)[-1]
            if self.lines.get(key) != line:
                self.lines[key] = line
                self.version += 1


class Changes:
    def __init__(
        self, store: Store, interval_s: float = 1.0, progress: ProgressLines | None = None
    ) -> None:
        self.store = store
        self.interval_s = interval_s
        self.progress = progress or ProgressLines()
        self._listeners: set[asyncio.Queue[str]] = set()
        self._watcher: asyncio.Task[None] | None = None
        self._mark: tuple[Any, ...] | None = None

    @property
    def listeners(self) -> int:
        return len(self._listeners)

    @property
    def mark(self) -> tuple[Any, ...] | None:
        """The change mark last read (None while no page listens: nobody to keep it fresh)."""
        return self._mark if self._watcher is not None and not self._watcher.done() else None

    def _ensure_watching(self) -> None:
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.create_task(self._watch(), name="dashboard-changes")

    async def _watch(self) -> None:
        while self._listeners:
            mark: tuple[Any, ...] | None
            try:
                mark = (*await self.store.change_mark(), self.progress.version)
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


class PartCache:
    """Rendered parts that every viewer of the same groups sees alike, kept while the change
    mark stays the same (and at most `ttl_s`, so ages and "working for" lines stay near true):
    fifty pages refreshing after one change cost one render. The pages ask at the same moment,
    so the first asker renders and the others wait for that render (single flight) instead of
    each starting its own."""

    def __init__(self, ttl_s: float = 2.0, size: int = 64) -> None:
        self.ttl_s = ttl_s
        self.size = size
        self.renders = 0
        self._parts: dict[Any, tuple[tuple[Any, ...], float, asyncio.Future[bytes]]] = {}

    async def get(
        self,
        key: Any,
        mark: tuple[Any, ...] | None,
        now: float,
        render: Callable[[], Awaitable[bytes]],
    ) -> bytes:
        found = self._parts.get(key)
        if mark is not None and found is not None and found[0] == mark:
            fresh = now - found[1] <= self.ttl_s
            failed = found[2].done() and found[2].exception() is not None
            if fresh and not failed:
                return await asyncio.shield(found[2])
        self.renders += 1
        if mark is None:  # nobody listens: nothing to share
            return await render()
        if len(self._parts) >= self.size:
            self._parts.clear()
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._parts[key] = (mark, now, future)
        try:
            body = await render()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: the waiters get it, the loop does not log it
            raise
        future.set_result(body)
        return body
