"""Tiny runner programs that misbehave, to drive LocalBackend's supervision for real.

Each is a script run as `python <script> <agent>` (LocalBackend appends the agent type). They
speak the real protocol where they speak at all, and record their pid (and their children's) in
the file named by `BAD_RUNNER_PIDS` (one pid per line) so tests can check that nothing survives.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
NAMES = (
    "crash",  # one progress event, "boom" on stderr, exit 3
    "hang",  # one progress event, a child `sleep` in its group, then sleeps forever
    "flood",  # valid progress events without end (so idle never fires)
    "long_line",  # one endless line without a newline
    "garbage",  # one progress event, then a line that is not JSON, then sleeps
    "ignore_sigterm",  # ignores SIGTERM, one progress event, sleeps forever
    "slow",  # N progress events spaced out, then a final (argv: count, delay)
    "env_dump",  # its environment, cwd and request: as progress (JSON), then as a final
    "no_final",  # one progress event, exit 0
    "final_then_hang",  # a final, then keeps stdout open and sleeps
    "silent_exit",  # exits 0 at once without reading its request or printing
    "two_answers",  # two finals, the same or different ones (argv: same|different)
    "forge_and_kill",  # its child writes a final APPROVED into its stdout, then SIGKILLs it
)


def command(name: str, *args: str) -> list[str]:
    """The LocalBackend `command` that runs the named bad runner."""
    if name not in NAMES:
        raise ValueError(f"no bad runner {name!r}; have {NAMES}")
    return [sys.executable, str(HERE / f"{name}.py"), *args]
