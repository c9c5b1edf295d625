"""The Claude runner starts like the CLI it drives: loading it loads no agent SDK and no MCP
layer (the SDK's import cost every turn ~0.5 s, 0.4 s of it `mcp`)."""

from __future__ import annotations

import subprocess
import sys


def test_the_claude_runner_imports_no_sdk_and_no_mcp() -> None:
    probe = (
        "import sys, runners.__main__, runners.claude; "
        "loaded = {m.split('.')[0] for m in sys.modules}; "
        "print(sorted(loaded & {'claude_agent_sdk', 'mcp', 'anyio'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stdout
