"""`/healthz`: is this Tribunal working? The engine (started, not stopping, its scanner alive),
its store (a statement answered within a deadline) and each platform connection (an adapter that
can tell, `Alive`). 200 with "ok" lines when all are; 503 naming what is not."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from bot.adapter import Adapter, Alive
from rooms.engine import Engine
from rooms.store import Store

STORE_DEADLINE_S = 2.0


@dataclass(frozen=True)
class Health:
    ok: bool
    lines: list[str]
    store_roundtrip_s: float | None


async def check(engine: Engine, store: Store, adapters: list[Adapter]) -> Health:
    lines: list[str] = []
    ok = True
    if engine.running:
        lines.append("engine: ok")
    else:
        ok = False
        lines.append("engine: not running")
    roundtrip: float | None = None
    started = time.perf_counter()
    try:
        await asyncio.wait_for(store.ping(), STORE_DEADLINE_S)
        roundtrip = time.perf_counter() - started
        lines.append(f"store: ok ({roundtrip * 1000:.1f} ms)")
    except Exception as exc:  # any failure to answer is "down", with what it said
        ok = False
        lines.append(f"store: down ({type(exc).__name__}: {exc})")
    for adapter in adapters:
        if isinstance(adapter, Alive) and not adapter.alive():
            ok = False
            lines.append(f"{adapter.platform}: disconnected")
        else:
            lines.append(f"{adapter.platform}: ok")
    return Health(ok, lines, roundtrip)
