"""Suite-wide hooks: a test marked `missing_tool` (tests/fakes/required.py) fails at setup."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "missing_tool: a tool the test needs is missing under TRIBUNAL_REQUIRE_ENGINE=1: it fails",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    mark = item.get_closest_marker("missing_tool")
    if mark is not None:
        pytest.fail(f"{mark.args[0]} (TRIBUNAL_REQUIRE_ENGINE=1: required, not skipped)")
