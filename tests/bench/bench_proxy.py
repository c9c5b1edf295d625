"""Streaming through the credential proxy against streaming direct, in the same run.

    .venv/bin/python -m tests.bench.bench_proxy [--repeats 20] [--mb 2] [--streams 10]

Three processes, as in production: an upstream (a Messages API stand-in on loopback that
streams an answer of `--mb` MB as server-sent events: message_start with usage, ~1 KB text
deltas, message_delta, message_stop, written as fast as the socket takes them), the credential
proxy (container/proxy/, TCP on loopback and its unix socket), and the client here (aiohttp).
Three paths, each timed `--repeats` times, interleaved: direct to the upstream; through the
proxy over TCP (the local backend's path); through the proxy's unix socket via the runner's
loopback forwarder (runners/_forward.py, the containers' path). Printed per path: time to the
first text delta and total time (medians, with the ratio to direct), then the aggregate
throughput of `--streams` concurrent streams, direct and through the proxy. Also the proxy
process's own CPU time per streamed answer, which a busy machine does not distort.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

KEY = "sk-bench-real-key"
DELTA_TEXT = "x" * 1000


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def answer_chunks(size_mb: float) -> list[bytes]:
    usage = {"input_tokens": 100, "output_tokens": 1}
    message = {"id": "msg_bench", "type": "message", "role": "assistant", "content": [],
               "model": "claude-sonnet-4-5", "stop_reason": None, "usage": usage}  # fmt: skip
    chunks = [_event("message_start", {"type": "message_start", "message": message})]
    delta = _event(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": DELTA_TEXT}},
    )  # fmt: skip
    chunks += [delta] * int(size_mb * 1024 * 1024 / len(delta))
    chunks.append(_event("message_delta", {"type": "message_delta",
                                           "delta": {"stop_reason": "end_turn"},
                                           "usage": {"output_tokens": len(chunks)}}))  # fmt: skip
    chunks.append(_event("message_stop", {"type": "message_stop"}))
    return chunks


def _upstream(size_mb: float, ports: Any) -> None:
    chunks = answer_chunks(size_mb)

    async def messages(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
        await response.write_eof()
        return response

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/messages", messages)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ports.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


def _proxy(upstream_url: str, socket_path: str, ports: Any, tokens: Any) -> None:
    from container.proxy import CredentialProxy, Upstream

    async def main() -> None:
        proxy = CredentialProxy({"claude": Upstream(upstream_url, KEY)})
        url = await proxy.listen_tcp()
        await proxy.listen_unix(Path(socket_path))
        grant = proxy.issue("claude", "bench")
        ports.put(url)
        tokens.put(grant.token)
        await asyncio.Event().wait()

    asyncio.run(main())


async def timed_stream(
    session: aiohttp.ClientSession, url: str, token: str
) -> tuple[float, float, int]:
    """(seconds to the first text delta, seconds in all, bytes) of one streamed answer."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "stream": True, "messages": []}
    started = time.perf_counter()
    first = 0.0
    size = 0
    async with session.post(
        f"{url}/v1/messages", json=body, headers={"x-api-key": token}
    ) as answer:
        assert answer.status == 200, answer.status
        async for data in answer.content.iter_any():
            if not first and b"content_block_delta" in data:
                first = time.perf_counter() - started
            size += len(data)
    return first, time.perf_counter() - started, size


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(args: argparse.Namespace, direct: str, proxied: str, token: str,
                  socket_path: str, proxy_pid: int) -> None:  # fmt: skip
    from runners._forward import forwarding

    environ = {"TRIBUNAL_PROXY_SOCKET": socket_path}
    async with forwarding(environ) as forwarded, aiohttp.ClientSession() as session:
        assert forwarded is not None
        paths: dict[str, tuple[str, str]] = {
            "direct": (direct, KEY),
            "proxy (TCP)": (proxied, token),
            "proxy (socket + forwarder)": (forwarded, token),
        }
        for url, key in paths.values():  # warm up connections and code paths
            await timed_stream(session, url, key)
        firsts: dict[str, list[float]] = {name: [] for name in paths}
        totals: dict[str, list[float]] = {name: [] for name in paths}
        size = 0
        proxy_cpu = 0.0
        for _ in range(args.repeats):
            for name, (url, key) in paths.items():
                before = cpu_seconds(proxy_pid)
                first, total, size = await timed_stream(session, url, key)
                if name == "proxy (TCP)":
                    proxy_cpu += cpu_seconds(proxy_pid) - before
                firsts[name].append(first)
                totals[name].append(total)
        print(f"one streamed answer of {size / 1e6:.2f} MB, median of {args.repeats}")
        print(f"{'path':<28} {'first delta':>12} {'x direct':>9} {'added':>9} "
              f"{'total':>9} {'x direct':>9}")  # fmt: skip
        base_first = statistics.median(firsts["direct"])
        base_total = statistics.median(totals["direct"])
        for name in paths:
            first, total = statistics.median(firsts[name]), statistics.median(totals[name])
            print(
                f"{name:<28} {first * 1e3:>9.2f} ms {first / base_first:>8.2f}x "
                f"{(first - base_first) * 1e3:>6.2f} ms {total * 1e3:>6.1f} ms "
                f"{total / base_total:>8.2f}x"
            )
        print(
            f"the proxy process's CPU per streamed answer: {proxy_cpu / args.repeats * 1e3:.1f} ms "
            f"({size / 1e6 / (proxy_cpu / args.repeats):.0f} MB per CPU second; a load-proof "
            "figure on a busy machine)"
        )
        print(f"\n{args.streams} concurrent streams, {args.rounds} rounds: aggregate throughput")
        rates: dict[str, float] = {}
        for name, (url, key) in paths.items():
            rates[name] = await _concurrent(session, url, key, args.streams, args.rounds)
        for name, rate in rates.items():
            print(f"{name:<28} {rate:>8.1f} MB/s {rate / rates['direct']:>8.2f}x")


async def _concurrent(session: aiohttp.ClientSession, url: str, key: str, streams: int,
                      rounds: int) -> float:  # fmt: skip
    started = time.perf_counter()
    total = 0
    for _ in range(rounds):
        results = await asyncio.gather(*(timed_stream(session, url, key) for _ in range(streams)))
        total += sum(size for _, _, size in results)
    return total / 1e6 / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    ports, tokens = ctx.Queue(), ctx.Queue()
    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp:
        socket_path = os.path.join(tmp, "proxy.sock")
        upstream = ctx.Process(target=_upstream, args=(args.mb, ports), daemon=True)
        upstream.start()
        upstream_url = f"http://127.0.0.1:{ports.get(timeout=30)}"
        proxy = ctx.Process(target=_proxy, args=(upstream_url, socket_path, ports, tokens),
                            daemon=True)  # fmt: skip
        proxy.start()
        try:
            proxied, token = ports.get(timeout=30), tokens.get(timeout=30)
            assert proxy.pid is not None
            asyncio.run(measure(args, upstream_url, proxied, token, socket_path, proxy.pid))
        finally:
            for process in (proxy, upstream):
                process.terminate()
                process.join(10)


if __name__ == "__main__":
    main()
