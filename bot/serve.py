"""`tribunal serve`: every served platform in one process, on one engine and store (DESIGN §7).

With `[dashboard] port` set, the dashboard (bot/dashboard) runs beside them on the same engine.
`configured_adapters` asks each registered factory (bot/platforms.py imports them all) for its
adapter; `serve` opens the app with all of them and runs until an adapter that can end on its
own has ended (the console, at /quit or end of input; Slack or Discord when the platform refuses
the token for good: that ends `serve` with a settings error, exit 78), or until SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import TextIO

import bot.platforms
from bot.adapter import Adapter, Finishing
from bot.app import App, open_app
from bot.dashboard.server import start_dashboard
from bot.settings import Settings
from rooms.base.ports import Runner


def configured_adapters(settings: Settings) -> list[Adapter]:
    """The adapter of every registered platform whose factory returns one for these settings."""
    factories = bot.platforms.registered()
    return [a for factory in factories.values() if (a := factory(settings)) is not None]


def unavailable_platforms(settings: Settings) -> list[str]:
    """Platforms with a token in the settings but no adapter in this build."""
    factories = bot.platforms.registered()
    return [p for p in settings.platforms_configured() if p not in factories]


async def serve(
    settings: Settings,
    adapters: Sequence[Adapter],
    *,
    runner: Runner | None = None,
    warn: TextIO | None = None,
) -> int:
    """Run the adapters on one engine until one of them ends (or SIGTERM). Returns 0."""
    with _stop_on_sigterm() as terminated:
        try:
            before = functools.partial(_dashboard, settings, warn or sys.stderr)
            async with open_app(
                settings, *adapters, runner=runner, warn=warn, before_adapters=before
            ):
                await _until_one_finishes(adapters)
        except asyncio.CancelledError:
            if not terminated.is_set():
                raise
            # Stopped on request: the adapters and the engine were stopped on the way out (a
            # running turn is marked interrupted and runs again on the next start).
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
    return 0


async def _dashboard(
    settings: Settings, out: TextIO, app: App, stack: contextlib.AsyncExitStack
) -> None:
    """The dashboard, when `[dashboard] port` is set: its own listener, or Slack's HTTP one
    when the port is TRIBUNAL_HTTP_PORT (mounted before the adapters start)."""
    dashboard = await start_dashboard(app, settings, stack)
    if dashboard is not None:
        out.write(f"tribunal: the dashboard is on {dashboard.url}\n")


async def _until_one_finishes(adapters: Sequence[Adapter]) -> None:
    ending = [a.finished() for a in adapters if isinstance(a, Finishing)]
    if not ending:
        await asyncio.Event().wait()  # servers: until SIGTERM or Ctrl-C
        return
    waiters = [asyncio.ensure_future(e) for e in ending]
    try:
        done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for waiter in done:
            waiter.result()  # what broke an adapter's loop is not swallowed
    finally:
        for waiter in waiters:
            waiter.cancel()


@contextlib.contextmanager
def _stop_on_sigterm() -> Iterator[threading.Event]:
    """SIGTERM (a service manager stopping us) cancels the run like /quit would, so adapters,
    engine and store are closed properly instead of the process dying mid-write."""
    terminated = threading.Event()
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_sigterm() -> None:
        terminated.set()
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / no support
        yield terminated
        return
    try:
        yield terminated
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
