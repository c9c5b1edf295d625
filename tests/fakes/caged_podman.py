"""A Podman that cannot run containers, the way it fails on a machine without nesting.

`cage(bin_dir)` writes two programs into `bin_dir` (put it first on PATH):
- `podman`: the real Podman, with `--runtime` pointing at the `runc` below;
- `runc`: the real runc for every command but `create`/`run`, which fail with the error runc
  gives where it may not mount /proc (an unprivileged container, no nesting), written to the log
  file Podman reads it from (`--log`) and to stderr.

So the real `podman system service` answers its API, imports images and creates containers, and
a container's start fails with the real message path: `… runc create failed: unable to start
container process: error during container init: error mounting "proc" to rootfs at "/proc": …
operation not permitted: OCI permission denied`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

NO_NESTING = (
    "runc create failed: unable to start container process: error during container init: error "
    'mounting "proc" to rootfs at "/proc": mount proc:/proc (via /proc/self/fd/6), flags: 0xe: '
    "operation not permitted"
)

_RUNC = """#!/bin/sh
log=""; prev=""
for arg in "$@"; do [ "$prev" = "--log" ] && log="$arg"; prev="$arg"; done
for arg in "$@"; do
  case "$arg" in
    create|run)
      [ -n "$log" ] && printf '%s\\n' {record} >> "$log"
      printf '%s\\n' {message} >&2
      exit 1;;
  esac
done
exec {real} "$@"
"""


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def cage(bin_dir: Path) -> None:
    real_podman, real_runc = shutil.which("podman"), shutil.which("runc")
    assert real_podman and real_runc, "needs podman and runc installed"
    bin_dir.mkdir(parents=True, exist_ok=True)
    record = json.dumps({"level": "error", "msg": NO_NESTING, "time": "2026-12-03T00:00:00Z"})
    runc = bin_dir / "runc"
    runc.write_text(
        _RUNC.format(record=_quoted(record), message=_quoted(NO_NESTING), real=real_runc)
    )
    podman = bin_dir / "podman"
    podman.write_text(f'#!/bin/sh\nexec {real_podman} --runtime {runc} "$@"\n')
    for program in (runc, podman):
        program.chmod(0o755)
