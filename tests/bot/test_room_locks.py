"""RoomLocks (bot/room_locks.py): a room's events one at a time and in order, other rooms side
by side, and no lock kept for a room nobody is in."""

from __future__ import annotations

import asyncio

from bot.room_locks import RoomLocks


async def test_one_event_per_room_at_a_time_in_order_rooms_side_by_side() -> None:
    locks = RoomLocks()
    log: list[str] = []
    gate = asyncio.Event()

    async def event(room: str, name: str, *, wait: bool = False) -> None:
        async with locks.hold(room):
            log.append(f"{name} in")
            if wait:
                await gate.wait()
            log.append(f"{name} out")

    first = asyncio.create_task(event("a", "a1", wait=True))
    await asyncio.sleep(0)
    second = asyncio.create_task(event("a", "a2"))
    other = asyncio.create_task(event("b", "b1"))
    await other  # room b does not wait for room a
    assert log == ["a1 in", "b1 in", "b1 out"] and len(locks) == 1
    gate.set()
    await asyncio.gather(first, second)
    assert log[3:] == ["a1 out", "a2 in", "a2 out"]
    assert len(locks) == 0, "no lock is kept for a room nobody holds"


async def test_a_failed_event_releases_its_room() -> None:
    locks = RoomLocks()
    try:
        async with locks.hold("a"):
            raise ValueError("the engine failed")
    except ValueError:
        pass
    assert len(locks) == 0
    async with asyncio.timeout(1), locks.hold("a"):
        pass
