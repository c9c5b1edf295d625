"""The console room as an `Adapter` (bot/adapter.py): the first platform, registered like any other.

`tribunal serve` starts it when no other chat platform is served (no Slack or Discord token, or
no adapter for it in this build); `tribunal chat` (bot/chat.py) always opens it. Its input loop
runs as a task from `start` to /quit or end of input; `finished` says when, so `serve` can end.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TextIO

from bot.adapter import registered
from bot.console.lines import LineReader
from bot.console.room import PLATFORM, ConsoleRoom
from bot.console.screen import ConsolePlatform
from bot.settings import Settings
from rooms.base.model import Outbound
from rooms.engine import Engine


class ConsoleAdapter:
    platform = PLATFORM

    def __init__(
        self, *, stdin: TextIO, stdout: TextIO, user: str, lockstep: bool | None = None
    ) -> None:
        """`lockstep`: None = when stdin is not a terminal (see bot/console/room.py)."""
        self.stdin = stdin
        self.user = user
        self.lockstep = (not stdin.isatty()) if lockstep is None else lockstep
        tty = stdout.isatty() and stdin.isatty()
        self.screen = ConsolePlatform(stdout, tty=tty, prompt=f"{user}> " if tty else "")
        self._loop: asyncio.Task[None] | None = None

    async def start(self, engine: Engine) -> None:
        room = ConsoleRoom(engine, self.screen, user=self.user, lockstep=self.lockstep)
        await room.greet()
        self.screen.show_prompt()
        lines = LineReader(self.stdin)
        self._loop = asyncio.create_task(room.run(lines), name="tribunal-console")

    async def stop(self) -> None:
        if self._loop is not None and not self._loop.done():
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop

    async def deliver(self, message: Outbound) -> str | None:
        return await self.screen.deliver(message)

    async def finished(self) -> None:
        """Returns once the person quit or the input ended (re-raises what broke the loop)."""
        if self._loop is not None:
            await asyncio.shield(self._loop)


def console_factory(settings: Settings) -> ConsoleAdapter | None:
    """The console, unless another configured platform is served by an adapter of this build."""
    available = registered()
    if any(p in available for p in settings.platforms_configured()):
        return None
    return ConsoleAdapter(stdin=sys.stdin, stdout=sys.stdout, user=settings.console.user)
