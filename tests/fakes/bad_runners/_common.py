"""Shared by the bad runner scripts (imported from the script's own folder)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def record_pid(pid: int | None = None) -> None:
    path = os.environ.get("BAD_RUNNER_PIDS")
    if path:
        with open(path, "a") as f:
            f.write(f"{pid or os.getpid()}\n")


def read_request() -> dict[str, Any]:
    line = sys.stdin.readline()
    return json.loads(line) if line.strip() else {}


def emit(kind: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"kind": kind, **fields}) + "\n")
    sys.stdout.flush()
