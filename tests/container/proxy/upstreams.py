"""Hand-made model API upstreams on loopback for the proxy's limit tests: one that streams an
answer a piece at a time while the test holds the rest back, and one that counts how many
requests it has at once. (The scripted fakes in tests/fakes send a whole answer at once.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import web


@asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """`app` on 127.0.0.1; yields its base URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def sse(event: dict[str, object]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


@dataclass
class HeldStream:
    """Streams `head` events, then `deltas` text deltas of `piece`, then waits for `release`
    and ends the answer without its final usage (the runner is gone by then)."""

    head: list[dict[str, object]]
    delta: dict[str, object]
    deltas: int
    release: asyncio.Event = field(default_factory=asyncio.Event)
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        try:
            await response.prepare(request)
            for event in self.head:
                await response.write(sse(event))
            for _ in range(self.deltas):
                await response.write(sse(self.delta))
            await self.release.wait()
            await response.write(sse(self.delta))
            return response
        finally:
            self.finished.set()

    def app(self, path: str) -> web.Application:
        app = web.Application()
        app.router.add_post(path, self.handle)
        return app


@dataclass
class Crowd:
    """Answers every request once `release` is set, and counts the most it had at once."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    now: int = 0
    most: int = 0
    seen: int = 0

    async def handle(self, request: web.Request) -> web.Response:
        await request.read()
        self.now += 1
        self.seen += 1
        self.most = max(self.most, self.now)
        try:
            await self.release.wait()
        finally:
            self.now -= 1
        usage = {"input_tokens": 1, "output_tokens": 1}
        return web.json_response({"type": "message", "model": "m", "content": [], "usage": usage})

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self.handle)
        return app
