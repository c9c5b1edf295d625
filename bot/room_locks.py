"""One event per room at a time, rooms side by side: what each chat adapter needs between its
inbound events and `Engine.handle`, so a room's events reach the engine in the order the
platform sent them (two racing clicks are decided one after the other)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class RoomLocks:
    """A lock per room key, kept only while someone holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # room key → lock, users

    def __len__(self) -> int:
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
