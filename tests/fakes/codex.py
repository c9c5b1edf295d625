"""Finding the Codex CLI for tests, and running the Codex runner as the host does.

The binary comes from `$CODEX_BIN`, else from the cache folder that tests/fakes/install_codex.sh
fills (tests/run calls it), else from `codex` on PATH. Tests that need it are marked
`@pytest.mark.codex` and use the `needs_codex` marker below, which skips them when none is found.

`codex_env()` is the environment a test gives the runner: the fake's provider variables, a
private CODEX_HOME and HOME, and nothing that points at a real host.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from runners.protocol import RunEvent, RunRequest, decode_event, encode
from tests.fakes.required import needs

CODEX_VERSION = "0.171.0"
REPO = Path(__file__).resolve().parents[2]


def default_install_dir() -> Path:
    configured = os.environ.get("TRIBUNAL_CODEX_DIR")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "tribunal" / f"codex-{CODEX_VERSION}"


def find_codex() -> str | None:
    explicit = os.environ.get("CODEX_BIN")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    modules = default_install_dir() / "node_modules"
    if modules.is_dir():
        for candidate in sorted(modules.glob("**/vendor/*/bin/codex")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return shutil.which("codex")


CODEX_BIN = find_codex()

needs_codex = needs(
    CODEX_BIN is not None, "no Codex CLI: set CODEX_BIN or run tests/fakes/install_codex.sh"
)


def codex_env(fake_env: dict[str, str], home: Path, **extra: str) -> dict[str, str]:
    """A clean environment for one runner process (no inherited keys or base URLs)."""
    assert CODEX_BIN is not None
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CODEX_HOME": str(home / "codex"),
        "CODEX_BIN": CODEX_BIN,
        "LANG": "C.UTF-8",
        # The runner and its `runners` package come from this checkout.
        "PYTHONPATH": str(REPO),
        **fake_env,
        **extra,
    }
    return env


@dataclass
class RunnerResult:
    events: list[RunEvent]
    status: int
    stderr: str

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def of(self, kind: str) -> list[RunEvent]:
        return [e for e in self.events if e.kind == kind]

    def one(self, kind: str) -> RunEvent:
        found = self.of(kind)
        assert len(found) == 1, f"expected one {kind} event, got {self.kinds()}\n{self.stderr}"
        return found[0]


def run_codex_runner(
    request: RunRequest | str, env: dict[str, str], timeout: float = 120
) -> RunnerResult:
    """`python -m runners codex` with one request line on stdin; every stdout line must be a
    protocol event (decode_event raises otherwise)."""
    line = request if isinstance(request, str) else encode(request)
    proc = subprocess.run(
        [sys.executable, "-m", "runners", "codex"],
        input=line.encode(),
        capture_output=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
    )
    stdout = proc.stdout.decode()
    events = [decode_event(ln) for ln in stdout.splitlines() if ln.strip()]
    return RunnerResult(events, proc.returncode, proc.stderr.decode(errors="replace"))
