"""Reference fan-out: wall time of asking n references at once against the sum of the same calls
made one after the other, in the same run, through the real SDKs against the fake APIs on
loopback (anthropic Messages, openai Chat Completions, openai Responses in turn).

    .venv/bin/python -m tests.bench.bench_references [--refs 3] [--delay 0.2] [--rounds 10]
                                                     [--checked]

Each fake answers after `delay` × (1, 1.5, 2, …) seconds, so the slowest call is known. The
clients are warmed first (a running bot's clients are: the first call of each pays for its TLS
context and the SDK's lazy model building). Printed per round: the sum of the sequential calls,
the slowest single call, the fan-out's wall time, and its overhead over the slowest call; then
the medians and the ratio sum / fan-out. Goal: fan-out = slowest + < 50 ms. The fakes run in
a process of their own, so their threads do not take the measured loop's interpreter lock.

`--checked` calls them as a group without allow_private_urls would: by a name, through the
connect-time address check (bot/references/network.py), the name resolved by a fake DNS to a
public-looking address that the fake wire takes to loopback. Without it, the SDKs' own clients.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import time
from contextlib import ExitStack
from multiprocessing.connection import Connection
from typing import Any

from bot.references.clients import SDKReference, make_reference
from bot.references.network import CheckedNetwork
from bot.settings_references import ReferenceSettings
from rooms.references.panel import consult
from tests.fakes import chat_api, messages_api, responses_api
from tests.fakes.network import PUBLIC, FakeDNS, LoopbackWire

APIS = ("anthropic", "openai-chat", "openai-responses")


def _fake(api: str, delay: float) -> Any:
    answer = f"VERDICT: REVISE\nthe {api} view"
    if api == "anthropic":
        fake: Any = messages_api.FakeMessagesAPI().start()
        fake.script(
            messages_api.any_request(),
            [messages_api.slow(messages_api.text(answer), delay)],
            repeat_last=True,
        )
        return fake, fake.url
    if api == "openai-chat":
        fake = chat_api.FakeChatAPI().start()
        fake.script(
            chat_api.any_request(), [chat_api.slow(chat_api.text(answer), delay)], repeat_last=True
        )
        return fake, f"{fake.url}/v1"
    fake = responses_api.FakeResponsesAPI().start()
    fake.script(
        responses_api.any_request(),
        [responses_api.delayed(responses_api.text(answer), delay)],
        repeat_last=True,
    )
    return fake, f"{fake.url}/v1"


async def _round(refs: list[SDKReference], seed: int) -> tuple[float, float, float]:
    sequential = []
    for ref in refs:
        started = time.perf_counter()
        await ref.ask("context", timeout=60)
        sequential.append(time.perf_counter() - started)
    panel = await consult(refs, "context", seed=seed, deadline_s=60, clock=time.perf_counter)
    assert len(panel.answered) == len(refs), [o.error for o in panel.dropped]
    return sum(sequential), max(sequential), panel.wall_s


def _serve(conn: Connection, n: int, delay: float) -> None:
    """The fakes, in a process of their own: their threads do not compete with the event loop
    being measured for this process's interpreter lock."""
    with ExitStack() as stack:
        urls = []
        for i in range(n):
            fake, url = _fake(APIS[i % len(APIS)], delay * (1 + 0.5 * i))
            stack.callback(fake.stop)
            urls.append(url)
        conn.send(urls)
        conn.recv()  # until the benchmark is done


def _reference(settings: ReferenceSettings, checked: bool) -> SDKReference:
    env = {"K": "bench"}
    if not checked:
        return make_reference(settings, env, allow_private=True)
    url = settings.base_url.replace("127.0.0.1", "api.bench.test")
    network = CheckedNetwork(FakeDNS({"api.bench.test": [PUBLIC]}).resolve, LoopbackWire())
    return make_reference(settings.model_copy(update={"base_url": url}), env, network=network)


async def main(n: int, delay: float, rounds: int, checked: bool = False) -> None:
    ours, theirs = multiprocessing.get_context("spawn").Pipe()
    server = multiprocessing.get_context("spawn").Process(target=_serve, args=(theirs, n, delay))
    server.start()
    with ExitStack() as stack:
        stack.callback(server.join, 10)
        stack.callback(ours.send, "stop")
        urls = ours.recv()
        refs: list[SDKReference] = []
        for i, url in enumerate(urls):
            settings = ReferenceSettings(
                name=f"ref{i}",
                api=APIS[i % len(APIS)],
                base_url=url,
                model=f"m{i}",
                key_env="K",
                max_retries=0,
            )
            # The fakes are on 127.0.0.1; --checked routes the connect-time check's connections
            # to them from a public-looking address (tests/fakes/network.py).
            refs.append(_reference(settings, checked))
        await consult(refs, "warm-up", seed=0, deadline_s=60)
        rows = []
        how = "checked at connect time" if checked else "the SDKs' own clients"
        print(f"{n} references ({how}), delays {delay:g} s × (1, 1.5, …)")
        print(f"{'round':>5} {'sum of calls':>13} {'slowest':>9} {'fan-out':>9} {'overhead':>9}")
        for r in range(rounds):
            total, slowest, wall = await _round(refs, seed=r)
            rows.append((total, slowest, wall))
            print(
                f"{r + 1:>5} {total:>12.3f}s {slowest:>8.3f}s {wall:>8.3f}s "
                f"{(wall - slowest) * 1000:>7.1f}ms"
            )
        for ref in refs:
            await ref.close()
    total, slowest, wall = (statistics.median(col) for col in zip(*rows, strict=True))
    print(
        f"median: sum {total:.3f} s, slowest {slowest:.3f} s, fan-out {wall:.3f} s, overhead "
        f"{(wall - slowest) * 1000:.1f} ms; sum / fan-out = {total / wall:.2f}×"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refs", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--checked", action="store_true", help="through the address check")
    args = parser.parse_args()
    asyncio.run(main(args.refs, args.delay, args.rounds, args.checked))
