"""Ending a child process a test started (a bot's `serve`, a fleet engine): SIGTERM, as a
service manager would, then SIGKILL if it has not ended within `timeout_s`."""

from __future__ import annotations

import asyncio
import signal


async def stop_child(child: asyncio.subprocess.Process, timeout_s: float = 15) -> None:
    if child.returncode is not None:
        return
    child.send_signal(signal.SIGTERM)
    try:
        async with asyncio.timeout(timeout_s):
            await child.communicate()  # drains any piped output, so the child cannot block on it
    except TimeoutError:
        child.kill()
        await child.wait()
