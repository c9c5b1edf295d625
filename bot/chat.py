"""`tribunal chat`: the console room alone, served like any platform (bot/serve.py).

It sits above both: the console adapter (bot/console/) knows nothing of `serve`, and `serve`
knows the platforms only through their registry (bot/adapter.py, bot/platforms.py).
"""

from __future__ import annotations

from typing import TextIO

from bot.console.adapter import ConsoleAdapter
from bot.serve import serve
from bot.settings import Settings
from rooms.base.ports import Runner


async def chat(
    settings: Settings,
    *,
    stdin: TextIO,
    stdout: TextIO,
    runner: Runner | None = None,
    lockstep: bool | None = None,
) -> int:
    """Run the console room alone until /quit, end of input or SIGTERM."""
    console = ConsoleAdapter(
        stdin=stdin, stdout=stdout, user=settings.console.user, lockstep=lockstep
    )
    return await serve(settings, [console], runner=runner)
