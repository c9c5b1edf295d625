"""Supervision rules shared by the backends: the runner's environment, stdout framing, limits.

Pure helpers with no process handling, so the local and the Docker backend apply the same rules
and tests can check them without starting anything.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from runners.protocol import ProtocolError, RunEvent, decode_event

# What a runner may see of the host's environment: enough to find programs, a home, a locale and
# a temp dir. Everything else (platform tokens, cloud credentials, the bot's settings) stays out;
# model credentials come per run in RunSpec.env.
HOST_ENV_ALLOWED = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "VIRTUAL_ENV",
)
# Not PYTHONPATH: an empty entry in it (`PYTHONPATH=:/x`, a common leftover) means the current
# folder, i.e. the workspace, and a `runners/` package there would replace the runner.

# Never handed to a runner, from any source (host, backend or run env): chat platform tokens and
# secrets by their usual names, and the container engine's address (a runner that could reach
# the engine could leave its container). The secrets each platform declares come on top, as data
# from bot/ (bot/adapter.py PlatformSpec, through the backends' `secrets`): this package imports
# nothing of the bot's, so a new platform's secret needs no edit here.
_FORBIDDEN = re.compile(r"^(SLACK_|DISCORD_|DOCKER_)|_(BOT_TOKEN|APP_TOKEN|SIGNING_SECRET)$")


def is_forbidden(name: str, secrets: Collection[str] = ()) -> bool:
    """Whether `name` must stay out of a runner: by its shape, or one of the declared
    `secrets` (variable names, any case)."""
    upper = name.upper()
    return bool(_FORBIDDEN.search(upper)) or upper in {s.upper() for s in secrets}


def runner_env(
    host: Mapping[str, str],
    *layers: Mapping[str, str],
    allowed: Iterable[str] = HOST_ENV_ALLOWED,
    secrets: Collection[str] = (),
) -> tuple[dict[str, str], list[str]]:
    """The runner's environment: the allow-listed host variables, then each layer on top (the
    backend's fixed env, then the run's env), without the forbidden names and the `secrets`.
    Returns it and the names that were refused."""
    env = {name: host[name] for name in allowed if name in host}
    refused: list[str] = []
    for layer in layers:
        for name, value in layer.items():
            if is_forbidden(name, secrets):
                refused.append(name)
            else:
                env[name] = value
    return env, refused


class OutputCapExceeded(Exception):
    pass


@dataclass
class LineSplitter:
    """Cuts a runner's stdout into lines, enforcing the total and the per-line byte caps."""

    max_total_bytes: int
    max_line_bytes: int
    total: int = 0
    _pending: bytes = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        self.total += len(chunk)
        if self.total > self.max_total_bytes:
            raise OutputCapExceeded(f"the runner printed more than {self.max_total_bytes} bytes")
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        for line in lines:
            self._check(line)
        self._check(self._pending)
        return lines

    def finish(self) -> list[bytes]:
        """At end of stream: an unterminated last line still counts."""
        rest, self._pending = self._pending, b""
        return [rest] if rest.strip() else []

    def _check(self, line: bytes) -> None:
        if len(line) > self.max_line_bytes:
            raise OutputCapExceeded(f"a runner line is longer than {self.max_line_bytes} bytes")


def parse_line(line: bytes) -> RunEvent | None:
    """A stdout line as an event; None for a blank line (ignored). Raises ProtocolError for
    anything else, which the backends treat as a broken runner: error `protocol`, kill."""
    if not line.strip():
        return None
    try:
        return decode_event(line)
    except ProtocolError:
        raise
    except ValueError as exc:  # e.g. not UTF-8 in a way pydantic rejects
        raise ProtocolError(str(exc)) from exc


class TailBuffer:
    """Keeps the last `limit` bytes written (a runner's stderr, for crash reports)."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._data = bytearray()

    def write(self, chunk: bytes) -> None:
        self._data += chunk
        if len(self._data) > self.limit:
            del self._data[: len(self._data) - self.limit]

    def text(self) -> str:
        return self._data.decode("utf-8", "replace").strip()

    def note(self) -> str:
        """`; stderr: <its last 1000 characters>` for an error's text, or nothing."""
        tail = self.text()
        return f"; stderr: {tail[-1000:]}" if tail else ""
