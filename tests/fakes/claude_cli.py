"""Where the Claude Code binary is (the one bundled in the claude-agent-sdk wheel), and the marks
for tests that need it: `pytestmark = claude_marks` (or `@requires_claude` on one test) marks
them `claude` and skips them when the binary is missing."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from tests.fakes.required import needs

T = TypeVar("T", bound=Callable[..., object])


def bundled_cli() -> Path | None:
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return path if path.is_file() and os.access(path, os.X_OK) else None


claude_marks = [
    pytest.mark.claude,
    needs(bundled_cli() is not None, "no Claude Code binary in claude-agent-sdk"),
]


def requires_claude(test: T) -> T:
    for mark in claude_marks:
        test = mark(test)
    return test
