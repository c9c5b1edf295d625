"""`python -P -m runners --warm`: a spare runner, started before its turn is known (issue 28).

A runner's own start (the interpreter, pydantic, asyncio, the protocol and the runner modules)
took ~0.15–0.5 s of every turn, more than a third of a bare Claude Code turn. A spare pays it
ahead: the LocalBackend starts one in the background (container/spares.py), and it waits here,
past its imports, blocked reading stdin, until a turn is handed to it:

1. it protects stdout at once (runners/_io.protect_stdout: the protocol fd is private and the
   process non-dumpable, also while it waits);
2. it reads one `TurnSetup` line (runners/protocol.py): the agent type, the working folder
   and the turn's whole environment. End of stdin instead: the spare was dismissed; it exits
   0 and says nothing;
3. it answers with one blank line on the protocol fd (blank lines are no events and are ignored
   by every backend): the backend waits for it a bounded time, so a spare that hung or died
   is noticed before the turn depends on it, and the turn is started afresh instead;
4. it takes the environment (replacing the one it started with: that one held only what every
   turn shares, never a turn's credentials) and the folder, then runs the turn exactly as
   `python -m runners <agent>` does, reading the request line that follows (runners/_io.py).

Everything the runners read from the environment they read when the turn runs (HOME, PATH,
TRIBUNAL_PROXY_SOCKET, the model variables), never at import; the temp folder, which
`tempfile` caches at its first use, is forgotten with the old environment. What the interpreter
itself read at its start (PYTHON* variables, the locale) cannot change: the backend only gives
a spare a turn whose values of those are the spare's own (container/spares.py).
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import IO

# Imported here, before the turn is known: that is what the spare is for.
from runners import claude, codex, command
from runners._io import (
    EXIT_BAD_REQUEST,
    EXIT_OK,
    MAX_REQUEST_BYTES,
    EventWriter,
    TurnFunction,
    protect_stdout,
    run_main,
)
from runners.protocol import CRASHED, PROTOCOL, ProtocolError, TurnSetup, decode_setup, error

TURNS: dict[str, TurnFunction] = {
    "claude": claude.run_turn,
    "codex": codex.run_turn,
    "command": command.run_turn,
}
ACK = b"\n"


def read_setup(stream: IO[bytes]) -> TurnSetup | None:
    """The setup line; None at end of stdin (dismissed). Raises ProtocolError."""
    line = stream.readline(MAX_REQUEST_BYTES + 1)
    if not line:
        return None
    if len(line) > MAX_REQUEST_BYTES:
        raise ProtocolError(f"setup line longer than {MAX_REQUEST_BYTES} bytes")
    return decode_setup(line)


def take_environment(setup: TurnSetup) -> None:
    """The turn's environment and folder replace the spare's."""
    os.environ.clear()
    os.environ.update(setup.env)
    tempfile.tempdir = None  # found again from the turn's TMPDIR at its first use
    os.chdir(setup.cwd)


def main(stdin: IO[bytes] | None = None) -> int:
    out_fd = protect_stdout()
    stream = stdin if stdin is not None else sys.stdin.buffer
    try:
        setup = read_setup(stream)
    except ProtocolError as exc:
        EventWriter(out_fd).emit(error(PROTOCOL, f"bad turn setup: {exc}"))
        return EXIT_BAD_REQUEST
    if setup is None:
        return EXIT_OK
    os.write(out_fd, ACK)
    try:
        take_environment(setup)
    except OSError as exc:  # the folder is gone or not ours
        where = f"could not start the runner in {setup.cwd}: {exc}"
        EventWriter(out_fd).emit(error(CRASHED, where))
        return EXIT_BAD_REQUEST
    return run_main(TURNS[setup.agent], stdin=stream, out_fd=out_fd)
