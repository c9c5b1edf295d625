"""Discord inbound: MESSAGE_CREATE events pushed by the fake Gateway, handled by the adapter into
the engine, against bare discord.py dispatching the same payloads to a no-op `on_message`.

    .venv/bin/python -m tests.bench.bench_discord [--latency 300] [--burst 1000]

One process, one event loop, one fake Discord on loopback (tests/fakes/discord_api.py), the
real discord.py client through `start()`-equivalent `login` + `connect`. A task is opened in a
thread first (its owner's turn never ends), then each event is a person's reply in that thread:
the adapter hands it to the engine, which stores it on the task (the event id recorded in the
same transaction). Measured from the moment the fake writes the frame to the socket:

- latency: one event at a time, until `on_message` runs (bare), until the adapter's
  `on_message` has handed it on (its room known, its handling in a task of its own: the hot
  path, which issue 28 wants within 1.5x of bare), and until it is stored; p50 and p99 over
  `--latency` events;
- throughput: `--burst` events written back to back, messages/s until the last is dispatched /
  handed on / stored.

The ratio rows are adapter ÷ bare (latency) and bare ÷ adapter (throughput), in the same run. A
last row hands the same kind of Inbound to `Engine.handle` directly (no Gateway, no adapter):
the engine's and store's share of the whole path.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import discord

from bot.adapter import Router
from bot.discord.adapter import DiscordAdapter
from bot.discord.client import api_base, intents
from rooms.base.model import GroupPolicy, Inbound, RoomRef
from rooms.engine import Engine
from rooms.store import Store
from tests.fakes.discord import ALICE, CHANNEL_ID, FakeDiscord
from tests.fakes.runner import ScriptedRunner, hang

Result = tuple[list[float], float]


class Arrivals:
    """When each message id was done with (stored, or dispatched)."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self._changed = asyncio.Condition()

    async def done(self, message_id: int) -> None:
        self.at[message_id] = time.perf_counter()
        async with self._changed:
            self._changed.notify_all()

    async def wait(self, message_id: int) -> float:
        async with self._changed:
            await self._changed.wait_for(lambda: message_id in self.at)
        return self.at[message_id]

    async def wait_all(self, ids: list[int]) -> float:
        async with self._changed:
            await self._changed.wait_for(lambda: all(i in self.at for i in ids))
        return max(self.at[i] for i in ids)


class BareClient(discord.AutoShardedClient):
    def __init__(self, arrivals: Arrivals) -> None:
        super().__init__(intents=intents(), guild_ready_timeout=0.05)
        self.arrivals = arrivals

    async def on_message(self, message: discord.Message) -> None:
        if not message.author.bot:
            await self.arrivals.done(message.id)


class OneGroup:
    def __init__(self) -> None:
        self.policy = GroupPolicy(name="bench", approvers=frozenset({str(ALICE)}))

    def for_room(self, room: RoomRef) -> GroupPolicy | None:
        return self.policy if room.channel == str(CHANNEL_ID) else None


@dataclass
class Contender:
    """One contender: the fake Discord it listens to, the thread it is told in, and when each
    message reached each point of interest (the last is what the next message waits for)."""

    fake: FakeDiscord
    thread: str
    arrivals: list[Arrivals]
    tag: str
    sent: dict[int, float] = field(default_factory=dict)
    burst: tuple[list[int], float] = ([], 0.0)

    async def one(self, i: int) -> None:
        at = time.perf_counter()
        message = await self.fake.say(ALICE, f"{self.tag} note {i}", channel=self.thread)
        self.sent[int(message["id"])] = at
        await self.arrivals[-1].wait(int(message["id"]))

    async def burst_of(self, n: int) -> None:
        started = time.perf_counter()
        ids = [
            int((await self.fake.say(ALICE, f"{self.tag} burst {i}", channel=self.thread))["id"])
            for i in range(n)
        ]
        await self.arrivals[-1].wait_all(ids)
        self.burst = (ids, started)

    def results(self) -> list[Result]:
        ids, started = self.burst
        return [
            (
                [where.at[mid] - at for mid, at in self.sent.items()],
                len(ids) / (max(where.at[i] for i in ids) - started),
            )
            for where in self.arrivals
        ]


async def measure(paths: list[Contender], latency_n: int, burst_n: int) -> None:
    """Latencies one event at a time, the contenders alternated event by event (so a change
    in the machine's load falls on both), then a burst to each, in turn."""
    for i in range(latency_n):
        for path in paths if i % 2 else reversed(paths):
            await path.one(i)
    for path in paths:
        await path.burst_of(burst_n)


async def measure_engine(
    engine: Engine, thread: str, latency_n: int, burst_n: int
) -> tuple[list[float], float]:
    """The engine's share: the same Inbound handed to `Engine.handle` directly, no Gateway."""
    room = RoomRef("discord", str(CHANNEL_ID), thread)

    def inbound(tag: str) -> Inbound:
        return Inbound(room, str(ALICE), f"engine {tag}", event_id=f"bench:{tag}")

    latencies = []
    for i in range(latency_n):
        sent = time.perf_counter()
        await engine.handle(inbound(f"note {i}"))
        latencies.append(time.perf_counter() - sent)
    started = time.perf_counter()
    for i in range(burst_n):
        await engine.handle(inbound(f"burst {i}"))
    return latencies, burst_n / (time.perf_counter() - started)


async def start_client(client: discord.Client, token: str) -> asyncio.Task[None]:
    await client.login(token)
    task = asyncio.create_task(client.connect())
    await client.wait_until_ready()
    return task


async def run(latency_n: int, burst_n: int) -> None:
    fake = await FakeDiscord().start()
    fake.echo = False
    # Two fake Discords, one per contender, both connected at once: discord.py keeps its REST
    # base in a class attribute, but once connected neither client calls REST while measured.
    bare_fake = await FakeDiscord().start()
    dispatched = Arrivals()
    bare = BareClient(dispatched)
    with api_base(bare_fake.api_url):
        bare_gateway = await start_client(bare, bare_fake.token)
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(str(Path(tmp) / "bench.db"))
        adapter = DiscordAdapter(
            fake.token,
            channels=frozenset({str(CHANNEL_ID)}),
            api_url=fake.api_url,
            guild_ready_timeout=0.05,
        )
        runner = ScriptedRunner({"owner": [hang()]})
        engine = Engine(store, runner, Router([adapter]), OneGroup(), data_dir=tmp)
        await engine.start()
        await adapter.start(engine)
        mention = await fake.say(ALICE, "a task that runs for the whole benchmark", mention=True)
        thread = str(mention["id"])
        await runner.wait_calls(1)
        await adapter.drain()

        handed, stored = Arrivals(), Arrivals()
        on_message = adapter.client._handle_message
        handle: Callable[..., Any] = adapter._message

        async def hot_path(message: discord.Message) -> None:
            await on_message(message)  # returns once the room is known and the work spawned
            await handed.done(message.id)

        async def timed(engine: Engine, message: discord.Message, room: Any) -> None:
            await handle(engine, message, room)
            await stored.done(message.id)

        adapter.client._handle_message = hot_path
        adapter._message = timed  # type: ignore[method-assign]
        ours = Contender(fake, thread, [handed, stored], "adapter")
        base = Contender(bare_fake, str(CHANNEL_ID), [dispatched], "bare")
        await measure([base, ours], latency_n, burst_n)
        messages = await store.messages(1)
        assert len(messages) == latency_n + burst_n, (len(messages), "every event stored once")
        engine_only = await measure_engine(engine, thread, latency_n, burst_n)
        await adapter.stop()
        await engine.stop()
        await store.close()
    await bare.close()
    await asyncio.gather(bare_gateway, return_exceptions=True)
    await bare_fake.stop()
    await fake.stop()
    report(base.results()[0], ours.results(), engine_only, latency_n, burst_n)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def row(name: str, result: Result) -> str:
    lat, rate = result
    return (
        f"{name:<40}{pct(lat, 0.5):>10.2f}{pct(lat, 0.99):>10.2f}"
        f"{statistics.mean(lat) * 1000:>10.2f}{rate:>10.0f}"
    )


def ratio(name: str, ours: Result, base: Result) -> str:
    (ol, orate), (bl, brate) = ours, base
    return (
        f"{name:<40}{pct(ol, 0.5) / pct(bl, 0.5):>9.2f}x{pct(ol, 0.99) / pct(bl, 0.99):>9.2f}x"
        f"{statistics.mean(ol) / statistics.mean(bl):>9.2f}x{brate / orate:>9.2f}x"
    )


def report(
    base: Result, ours: list[Result], engine_only: Result, latency_n: int, burst_n: int
) -> None:
    handed, stored = ours
    print(f"MESSAGE_CREATE handling: {latency_n} one at a time, then a burst of {burst_n}")
    print(f"{'path':<40}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}{'msgs/s':>10}")
    print(row("bare discord.py → no-op on_message", base))
    print(row("adapter → handed on (room known)", handed))
    print(row("adapter → engine → stored", stored))
    print(ratio("ratio handed on / bare (goal ≤ 1.5x)", handed, base))
    print(ratio("ratio stored / bare", stored, base))
    print(row("(Engine.handle alone, no Gateway)", engine_only))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=int, default=300)
    parser.add_argument("--burst", type=int, default=1000)
    args = parser.parse_args()
    asyncio.run(run(args.latency, args.burst))


if __name__ == "__main__":
    main()
