"""Plumbing every runner shares: read the one request line, write event lines, end cleanly.

A runner's stdout belongs to the protocol alone. `protect_stdout()` moves the real stdout to a
private file descriptor and points fd 1 (and `sys.stdout`) at stderr, so a stray `print` in a
library, or a child process that inherits fd 1, lands in the diagnostics instead of corrupting
the event stream.

`run_main()` wraps a runner's turn function: it guarantees exactly one terminal event (`final`
or `error`) and the exit status that goes with it (0 after a final, 1 after an error, 2 when the
request itself was unreadable), and turns any exception into an `error` event, so a traceback on
stderr is never the only output.
"""

from __future__ import annotations

import asyncio
import os
import sys
import traceback
from collections.abc import Callable, Coroutine
from typing import IO, Any

from runners import _forward, _procs
from runners.protocol import (
    AGENT,
    CRASHED,
    PROTOCOL,
    ProtocolError,
    RunEvent,
    RunRequest,
    decode_request,
    encode,
    error,
)

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_BAD_REQUEST = 2

# One request line is bounded: the prompt carries the last turns of a task, not a repository.
MAX_REQUEST_BYTES = 8 * 1024 * 1024


class EventWriter:
    """Writes protocol events as lines, flushed one by one so the host sees them as they happen.

    Only the first terminal event counts: a second `final`/`error` is dropped (logged on stderr)
    so the host never has to decide between two answers."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.terminal: RunEvent | None = None

    def emit(self, event: RunEvent) -> None:
        if self.terminal is not None:
            print(
                f"runner: dropped event after {self.terminal.kind}: {event.kind}", file=sys.stderr
            )
            return
        if event.kind in ("final", "error"):
            self.terminal = event
        data = encode(event).encode("utf-8")
        # os.write may write less than asked (e.g. interrupted by a signal): loop until done.
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    @property
    def ok(self) -> bool:
        return self.terminal is not None and self.terminal.kind == "final"


def protect_stdout() -> int:
    """Return a private fd for the protocol and send everything else written to fd 1 to stderr.

    The runner also becomes non-dumpable first: a private fd is out of reach of the children
    only as long as they cannot reopen it through /proc/<runner pid>/fd/<n> (runners/_procs.py).
    """
    _procs.become_undumpable()
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.set_inheritable(protocol_fd, False)  # children must not write protocol lines
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def read_request(stream: IO[bytes]) -> RunRequest:
    """The one request line from stdin. Raises ProtocolError with a clear reason."""
    line = stream.readline(MAX_REQUEST_BYTES + 1)
    if not line.strip():
        raise ProtocolError("no request: stdin was empty")
    if len(line) > MAX_REQUEST_BYTES:
        raise ProtocolError(f"request line longer than {MAX_REQUEST_BYTES} bytes")
    return decode_request(line)


TurnFunction = Callable[[RunRequest, EventWriter], Coroutine[Any, Any, None]]


async def _with_forwarder(turn: TurnFunction, request: RunRequest, writer: EventWriter) -> None:
    # In a runner container, the model API is reached through the proxy socket (runners/_forward).
    async with _forward.forwarding():
        await turn(request, writer)


def run_main(
    turn: TurnFunction, *, stdin: IO[bytes] | None = None, out_fd: int | None = None
) -> int:
    """Run one turn as a runner process does; returns the exit status."""
    if out_fd is None:
        out_fd = protect_stdout()
    writer = EventWriter(out_fd)
    try:
        request = read_request(stdin if stdin is not None else sys.stdin.buffer)
    except ProtocolError as exc:
        writer.emit(error(PROTOCOL, f"bad request: {exc}"))
        return EXIT_BAD_REQUEST
    _procs.become_subreaper()
    _procs.install_sigterm_cleanup()
    try:
        asyncio.run(_with_forwarder(turn, request, writer))
    except KeyboardInterrupt:
        writer.emit(error(AGENT, "interrupted"))
    except Exception as exc:  # the contract: an error event, never only a traceback
        traceback.print_exc(file=sys.stderr)
        writer.emit(error(CRASHED, f"runner failed: {type(exc).__name__}: {exc}"))
    finally:
        # Background processes the agent left behind (a dev server, `cmd &`) end with the turn.
        _procs.kill_descendants()
    if writer.terminal is None:
        writer.emit(error(CRASHED, "runner ended without a final answer"))
    return EXIT_OK if writer.ok else EXIT_ERROR
