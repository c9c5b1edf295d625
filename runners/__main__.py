"""`python -m runners claude|codex|command`: run one turn of the named type (DESIGN §6).

The type is chosen at exec time (`command` runs the engine's checks with no model:
runners/command.py); each type's module has a `main() -> int`. `--warm` instead of a type starts
a spare runner, which learns its type with its turn (runners/warm.py). A missing or unknown type is
answered on stdout with a protocol `error` event (and exit status 2), so the host sees why
even when it reads nothing but the event stream.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable

from runners.protocol import PROTOCOL, WARM, encode, error

AGENTS = {"claude": "runners.claude", "codex": "runners.codex", "command": "runners.command"}
EXIT_USAGE = 2


def _fail(text: str) -> int:
    sys.stdout.write(encode(error(PROTOCOL, text)))
    sys.stdout.flush()
    print(text, file=sys.stderr)
    return EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == [WARM]:
        from runners import warm

        return warm.main()
    if len(args) != 1 or args[0] not in AGENTS:
        usage = f"python -m runners {{{'|'.join(AGENTS)}}} or {WARM}"
        return _fail(f"usage: {usage} (got {args!r})")
    module_name = AGENTS[args[0]]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        return _fail(f"the {args[0]} runner is not available: {exc}")
    entry: Callable[[], int] | None = getattr(module, "main", None)
    if entry is None:
        return _fail(f"{module_name} has no main()")
    return entry()


def exit_now(status: int) -> None:
    """End the process with `status` once stdout and stderr are flushed, without the
    interpreter's finalization: the turn is over (its loop closed, its processes killed,
    runners/_io.py), and tearing down pydantic and asyncio module by module took 40–100 ms of
    every turn after its answer, a tenth of a bare Claude Code turn (issue 28)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    exit_now(main())
