"""Resolve's tests as the engine runs them: each designed command becomes a `Check` for the
command runner (runners/command.py, in the task's container, read-only on the workspace), and
what the runner saw becomes the test's result. No agent reports a result.

What a check's ending means:

| the command             | result | why                                                  |
| ----------------------- | ------ | ---------------------------------------------------- |
| exit 0                  | PASS   |                                                      |
| exit 126 or 127         | ERROR  | the shell could not execute it / found no such command |
| timed out, or a signal  | ERROR  | it did not finish: it says nothing about the claim   |
| no result at all        | ERROR  | not run (no time left), or the runner lost it        |
| any other exit status   | FAIL   |                                                      |

ERROR means the test could not run: it is excluded from the count (rooms.resolve.adjudicate).

A check's output is the command's, i.e. anyone's: it is only ever shown inside a code fence that
it cannot close, with its control characters made visible (`fenced`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ValidationError

from rooms.judge.structured import StructuredError
from rooms.resolve.limits import MIN_TEST_S, ResolveLimits
from rooms.resolve.outputs import DesignedTest, Observed
from runners.protocol import Check, CheckReport, CheckResult

CANNOT_RUN = {126: "the command could not be executed", 127: "command not found"}
SHOWN_LINES, SHOWN_CHARS = 8, 600  # of a test's output, in the room (the record keeps the tail)


class Observation(BaseModel):
    """What the engine saw one test do."""

    test: str
    outcome: Observed
    detail: str  # the engine's words: "exit 1", "timed out after 120 s", …
    exit_status: int | None = None
    output_tail: str = ""  # the command's output: hostile text, always shown through `fenced`


def checks_for(tests: Sequence[DesignedTest], limits: ResolveLimits) -> list[Check | None]:
    """One check per test, in order, each with `test_timeout_s` while the tests' total time
    `tests_total_s` lasts; None for a test no time is left for (it is not run)."""
    left = limits.tests_total_s
    checks: list[Check | None] = []
    for test in tests:
        budget = min(limits.test_timeout_s, left)
        if budget < MIN_TEST_S:
            checks.append(None)
            continue
        left -= budget
        checks.append(Check(id=test.id, command=test.command, timeout_s=budget))
    return checks


def outcome(result: CheckResult | None) -> tuple[Observed, str]:
    """The result a check's ending gives (the table above), and the reason in words."""
    if result is None:
        return "ERROR", "no result"
    if not result.started:
        return "ERROR", "it could not be started"
    if result.timed_out:
        return "ERROR", f"timed out after {result.duration_s:.0f} s"
    if result.signalled or result.exit_status is None:
        return "ERROR", f"killed by signal {result.signal}" if result.signal else "no exit status"
    status = result.exit_status
    if status == 0:
        return "PASS", "exit 0"
    if status in CANNOT_RUN:
        return "ERROR", f"exit {status}: {CANNOT_RUN[status]}"
    return "FAIL", f"exit {status}"


def read_report(structured: dict[str, object] | None) -> CheckReport:
    """The command runner's report, or StructuredError (the run is then asked once more)."""
    if structured is None:
        raise StructuredError("the command runner gave no report")
    try:
        return CheckReport.model_validate(structured)
    except ValidationError as exc:
        raise StructuredError(f"not a report of the checks: {exc.errors()[0]['msg']}") from exc


def observe(
    tests: Sequence[DesignedTest], checks: Sequence[Check | None], report: CheckReport
) -> list[Observation]:
    """Each test's observation. The report answers the checks in order; a result that is not
    the one of its check (another id, missing) counts as no result."""
    seen: list[Observation] = []
    for i, (test, check) in enumerate(zip(tests, checks, strict=True)):
        if check is None:
            seen.append(Observation(test=test.id, outcome="ERROR", detail="not run: no time left"))
            continue
        result = report.checks[i] if i < len(report.checks) else None
        if result is not None and result.id != check.id:
            result = None
        observed, detail = outcome(result)
        seen.append(
            Observation(
                test=test.id,
                outcome=observed,
                detail=detail,
                exit_status=result.exit_status if result else None,
                output_tail=result.output_tail if result else "",
            )
        )
    return seen


# Control characters but newline and tab, DEL, C1, and the bidirectional overrides and isolates
# (text that reads differently from what it is): shown as visible escapes.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_FENCE_RUN = re.compile(r"`{3,}")


def fenced(text: str, *, lines: int | None = None, chars: int | None = None) -> str:
    """`text` as a code block it cannot break out of: no run of three backticks survives in it
    (they would close the fence on every platform), and its control characters are escapes.
    `lines`/`chars`: keep only the end, marked as cut."""
    text = text.rstrip("\n")
    cut = False
    if lines is not None and text.count("\n") >= lines:
        text, cut = "\n".join(text.split("\n")[-lines:]), True
    if chars is not None and len(text) > chars:
        text, cut = text[-chars:], True
    text = _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else
                       f"\\u{ord(m.group()):04x}", text)  # fmt: skip
    text = _FENCE_RUN.sub(lambda m: "ˋ" * len(m.group()), text)
    return "```\n" + ("…\n" if cut else "") + (text or "(no output)") + "\n```"
