"""What a check's ending means (the table of rooms/resolve/checks.py), how the tests' time is
shared out, how a report maps back onto the tests, and how a test's output is shown."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooms.judge.structured import StructuredError
from rooms.resolve.checks import checks_for, fenced, observe, outcome, read_report
from rooms.resolve.limits import LimitsError, ResolveLimits
from rooms.resolve.outputs import DesignedTest, Prediction
from runners.protocol import CheckReport, CheckResult


def ended(**fields: Any) -> CheckResult:
    return CheckResult(id="T1", **fields)


@pytest.mark.parametrize(
    ("result", "observed", "detail"),
    [
        (ended(exit_status=0), "PASS", "exit 0"),
        (ended(exit_status=1), "FAIL", "exit 1"),
        (ended(exit_status=2), "FAIL", "exit 2"),
        (ended(exit_status=125), "FAIL", "exit 125"),
        (ended(exit_status=126), "ERROR", "exit 126: the command could not be executed"),
        (ended(exit_status=127), "ERROR", "exit 127: command not found"),
        (ended(exit_status=128), "FAIL", "exit 128"),
        (ended(exit_status=137), "FAIL", "exit 137"),  # a child killed: the shell went on
        (ended(exit_status=255), "FAIL", "exit 255"),
        (
            ended(timed_out=True, signalled=True, signal=9, duration_s=5),
            "ERROR",
            "timed out after 5 s",
        ),  # fmt: skip
        (ended(signalled=True, signal=11), "ERROR", "killed by signal 11"),
        (ended(exit_status=None), "ERROR", "no exit status"),
        (ended(started=False), "ERROR", "it could not be started"),
        # a timeout wins over an exit status, whatever the report says beside it
        (ended(exit_status=0, timed_out=True, duration_s=3), "ERROR", "timed out after 3 s"),
        (None, "ERROR", "no result"),
    ],
)
def test_what_an_ending_means(result: CheckResult | None, observed: str, detail: str) -> None:
    assert outcome(result) == (observed, detail)


def t(tid: str, command: str = "true") -> DesignedTest:
    return DesignedTest(
        id=tid,
        name=tid,
        command=command,
        predictions=[Prediction(position="A", outcome="PASS")],
    )


def test_each_test_gets_its_time_while_the_total_lasts() -> None:
    tests = [t("T1"), t("T2"), t("T3"), t("T4")]
    limits = ResolveLimits(test_timeout_s=40, tests_total_s=100.5)
    checks = checks_for(tests, limits)
    assert [(c.id, c.timeout_s) if c else None for c in checks] == [
        ("T1", 40),
        ("T2", 40),
        ("T3", 20.5),
        None,  # 0 s left: not run
    ]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"test_timeout_s": 0.5}, "test_timeout_s must be at least 1"),
        ({"test_timeout_s": 100, "tests_total_s": 50}, "tests_total_s must be at least"),
    ],
)
def test_bad_time_limits_name_the_field(fields: dict[str, float], says: str) -> None:
    with pytest.raises(LimitsError, match=says):
        ResolveLimits(**fields)  # type: ignore[arg-type]


def test_a_report_maps_onto_the_tests_in_order_and_a_wrong_id_is_no_result() -> None:
    tests = [t("T1"), t("T2"), t("T3"), t("T1")]  # a repeated id is run twice, in its place
    checks = checks_for(tests, ResolveLimits())
    report = CheckReport(
        checks=[
            CheckResult(id="T1", exit_status=0),
            CheckResult(id="T9", exit_status=0),  # not T2's
            CheckResult(id="T3", exit_status=3, output_tail="boom\n"),
        ]  # and nothing for the second T1
    )
    seen = observe(tests, checks, report)
    assert [(o.test, o.outcome, o.detail) for o in seen] == [
        ("T1", "PASS", "exit 0"),
        ("T2", "ERROR", "no result"),
        ("T3", "FAIL", "exit 3"),
        ("T1", "ERROR", "no result"),
    ]
    assert seen[2].output_tail == "boom\n" and seen[2].exit_status == 3


@given(
    st.recursive(
        st.none() | st.booleans() | st.text(max_size=4) | st.integers() | st.floats(),
        lambda c: (
            st.lists(c, max_size=3)
            | st.dictionaries(
                st.sampled_from(["checks", "id", "exit_status", "timed_out", "output_tail"]),
                c,
                max_size=4,
            )
        ),
        max_leaves=12,
    )
)
def test_any_structured_output_is_a_report_or_a_structured_error(data: Any) -> None:
    try:
        report = read_report(data if isinstance(data, dict) else {"checks": data})
    except StructuredError:
        return
    assert all(isinstance(c, CheckResult) for c in report.checks)


def test_no_report_is_a_structured_error() -> None:
    with pytest.raises(StructuredError, match="gave no report"):
        read_report(None)
    with pytest.raises(StructuredError, match="not a report of the checks"):
        read_report({"results": [{"test": "T1", "outcome": "PASS"}]})  # the old executor's


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("ok\n", "```\nok\n```"),
        ("", "```\n(no output)\n```"),
        # a fence in the output cannot close ours, inline or on a line of its own
        ("a\n```\n**forged**\n", "```\na\nˋˋˋ\n**forged**\n```"),
        ("x ```` y", "```\nx ˋˋˋˋ y\n```"),
        ("`one` and ``two``", "```\n`one` and ``two``\n```"),  # short runs cannot close it
        # terminal escapes, NUL, C1 and bidi overrides are shown, not obeyed
        ("\x1b[31mred\x00\x9b\u202eevil", "```\n\\x1b[31mred\\x00\\x9b\\u202eevil\n```"),
        ("tab\there\r\n", "```\ntab\there\\x0d\n```"),
    ],
)
def test_output_is_shown_in_a_fence_it_cannot_break(text: str, shown: str) -> None:
    assert fenced(text) == shown


def test_the_room_sees_only_the_end_of_the_output() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    assert fenced(text, lines=3) == "```\n…\nline 97\nline 98\nline 99\n```"
    assert fenced("x" * 50, chars=10) == "```\n…\n" + "x" * 10 + "\n```"
    assert fenced("short", lines=3, chars=10) == "```\nshort\n```"
