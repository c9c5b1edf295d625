"""What both backends make of a runner's output, whatever runs the runner.

The local and the Docker backend differ in how they start, watch and kill a runner; what they
accept from it is the same and lives here, free of process handling:

- stdout is cut into lines under the output caps (container/limits.py) and each non-blank line
  must be a RunEvent, and not `queued` (a backend's event): anything else is a broken runner,
  `protocol`;
- a run passes on one terminal event (`final` or `error`); a second one that repeats it word
  for word is dropped, a second one that differs is a `protocol` error passed on after it (a
  runner writes one answer: two different ones mean someone else wrote into its pipe, and the
  engine fails a turn whose final is followed by an error, never "first wins");
- a failure the backend detects (timeout, cap, crash, …) ends the run with the backend's own
  `error`, unless the runner's terminal event already went out: then it is only logged;
- but a runner that ends badly by itself after a `final` (killed by a signal, a non-zero exit
  status: a runner exits 0 after its final, runners/_io.py) fails the turn with a `crashed`
  error after it (`died_after_final`): an agent able to write into the runner's pipe (as root,
  on the local backend) and then kill the runner, before the runner's own answer could
  contradict it, must not close a task.

The DockerBackend holds the runner's `error` back until the exec has exited, so that a run the
memory limit killed can be reported as `out_of_memory` instead (`hold_error`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from container.limits import LineSplitter, OutputCapExceeded, parse_line
from runners.protocol import (
    CRASHED,
    HARD_TIMEOUT,
    IDLE_TIMEOUT,
    OUTPUT_CAP,
    PROTOCOL,
    ProtocolError,
    RunEvent,
    RunSpec,
    error,
)

log = logging.getLogger(__name__)

TERMINAL = ("final", "error")


class RunFailure(Exception):
    """Raised by a backend's supervision to end the run with its own error `code`
    (runners.protocol)."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


def timeout_failure(spec: RunSpec, idle_at: float, hard_at: float) -> RunFailure:
    """The failure for a passed deadline: the hard one when it is due first (or at the same
    time), else the idle one."""
    if hard_at <= idle_at:
        return RunFailure(HARD_TIMEOUT, f"the turn ran past {spec.hard_timeout_s:g}s")
    return RunFailure(IDLE_TIMEOUT, f"no event for {spec.idle_timeout_s:g}s")


class RunnerOutput:
    """A runner's stdout turned into the events a run passes on."""

    def __init__(self, max_total_bytes: int, max_line_bytes: int, *, hold_error: bool = False):
        self.splitter = LineSplitter(max_total_bytes, max_line_bytes)
        self.hold_error = hold_error
        self.answered = False  # the runner's terminal event went out
        self.held: RunEvent | None = None  # the runner's `error`, when held back
        self.first: RunEvent | None = None  # the runner's first terminal event
        self.contradicted = False  # a second, different terminal event came

    @property
    def terminal_seen(self) -> bool:
        return self.answered or self.held is not None

    @property
    def total(self) -> int:
        """Bytes of stdout so far."""
        return self.splitter.total

    def feed(self, chunk: bytes) -> Iterator[RunEvent]:
        """The events of the complete lines in `chunk`, parsed one line at a time as they are
        taken, so that events before a broken line go out before its failure is raised."""
        try:
            lines = self.splitter.feed(chunk)
        except OutputCapExceeded as exc:
            raise RunFailure(OUTPUT_CAP, str(exc)) from None
        for line in lines:
            yield from self.accept(line)

    def finish(self) -> Iterator[RunEvent]:
        """At the end of stdout: the events of an unterminated last line."""
        for line in self.splitter.finish():
            yield from self.accept(line)

    def accept(self, line: bytes) -> list[RunEvent]:
        try:
            event = parse_line(line)
        except ProtocolError as exc:
            raise RunFailure(
                PROTOCOL, f"the runner printed a line that is not an event: {exc}"
            ) from None
        if event is None:
            return []
        if event.kind == "queued":  # the backend's word (container/slots.py), not a runner's
            raise RunFailure(PROTOCOL, "the runner sent a `queued` event, which only a backend may")
        if event.kind in TERMINAL:
            if self.first is not None:
                return self._second_answer(event, self.first)
            self.first = event
            if self.hold_error and event.kind == "error":
                self.held = event
                return []
            self.answered = True
        return [event]

    def _second_answer(self, event: RunEvent, first: RunEvent) -> list[RunEvent]:
        if event == first or self.contradicted:
            log.warning("dropped a second terminal event from the runner: %s", event.kind)
            return []
        self.contradicted = True
        if not self.answered:
            return []  # a held error ends the run anyway
        return [
            error(
                PROTOCOL,
                f"the runner gave two different answers ({first.kind}, then {event.kind}):"
                " something else wrote into its output",
            )
        ]

    def died_after_final(self, how: str) -> RunEvent | None:
        """The error for a runner that ended as `how` says (not 0: "was killed by SIGKILL",
        "exited with status 3") after its `final`; None when its answer was no final or it
        ended well (how is None)."""
        if how is None or not self.answered or self.first is None or self.first.kind != "final":
            return None
        log.warning("the runner %s after its final answer", how)
        return error(CRASHED, f"the runner {how} after its final answer: the answer is not used")

    def ending(self, failure: RunFailure, note: str = "") -> RunEvent | None:
        """The event that ends a run the backend failed (`note` is added to its text): the
        runner's held `error` if there is one, else the backend's; None when the runner's answer
        already went out (the failure is logged only, the turn's answer is in)."""
        text = f"{failure.text}{note}"
        if self.terminal_seen:
            log.warning("runner failed after its answer (%s): %s", failure.code, text)
        if self.answered:
            return None
        if self.held is not None:
            return self.held
        return error(failure.code, text)
