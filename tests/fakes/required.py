"""Tests that need a tool of the machine (Podman, the runner image, the Claude or Codex binary,
busybox, Debian's Python): skipped when it is missing, except under TRIBUNAL_REQUIRE_ENGINE=1
(tests/run, CI), where a missing tool fails the test: a suite that installs the tools must
never pass by skipping what they were installed for."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def required() -> bool:
    return os.environ.get("TRIBUNAL_REQUIRE_ENGINE") == "1"


def unavailable(reason: str) -> NoReturn:
    """Inside a test or fixture: skip, or fail when the tools are required."""
    if required():
        pytest.fail(f"{reason} (TRIBUNAL_REQUIRE_ENGINE=1: required, not skipped)")
    pytest.skip(reason)


def needs(available: bool, reason: str) -> pytest.MarkDecorator:
    """A mark for a test that needs a tool: a skip when it is missing, a failure when the tools
    are required (`missing_tool`, failed at setup by tests/conftest.py); nothing otherwise."""
    if available:
        return pytest.mark.skipif(False, reason=reason)
    if required():
        return pytest.mark.missing_tool(reason)
    return pytest.mark.skipif(True, reason=reason)
