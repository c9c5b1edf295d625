"""The log of `tribunal serve` (and `chat`): Python's `logging`, set up once for our code and the
platform libraries (slack_bolt, slack_sdk, discord.py, aiohttp).

Level: `--log-level`, else TRIBUNAL_LOG_LEVEL, else the command's default (INFO for serve with
a platform, WARNING for chat and for serve with the console room alone: the room is on stdout).
Format: one line per record, `time level logger: message` (and the traceback, indented by
Python), or with TRIBUNAL_LOG_FORMAT=json (or `--log-format json`) one JSON object per line
(`time`, `level`, `logger`, `message`, `exc` when there is a traceback), for a log collector.

discord.py gives its loggers a NullHandler, so without this its records (the errors of its event
and button handlers among them) went nowhere. The libraries' chatter below WARNING (aiohttp's
access lines, bolt's per-request lines) is kept for DEBUG. Every value of `secrets` (the
platform tokens) is replaced by `***` in what is written, whoever logged it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterable
from typing import Literal, TextIO

from pydantic import BaseModel, SecretStr

from bot.settings_sections import SettingsError

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
FORMATS = ("text", "json")
LEVEL_VARIABLE = "TRIBUNAL_LOG_LEVEL"
FORMAT_VARIABLE = "TRIBUNAL_LOG_FORMAT"
LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries whose INFO is noise an operator cannot act on (one line per HTTP request, per event).
_CHATTY = ("aiohttp.access", "slack_bolt", "slack_sdk.web", "slack_sdk.socket_mode")
_MARK = "_tribunal_handler"


class LogSettingError(SettingsError):
    """A log level or format that is not one of ours (the CLI prints it and exits 78)."""


def chosen_level(given: str | None, default: str) -> str:
    value = (given or os.environ.get(LEVEL_VARIABLE) or default).strip().upper()
    if value not in LEVELS:
        raise LogSettingError(
            [f"settings: {LEVEL_VARIABLE}: {value!r} is not one of {', '.join(LEVELS)}"]
        )
    return value


def chosen_format(given: str | None) -> LogFormat:
    value = (given or os.environ.get(FORMAT_VARIABLE) or "text").strip().lower()
    if value == "json":
        return "json"
    if value == "text":
        return "text"
    raise LogSettingError([f"settings: {FORMAT_VARIABLE}: {value!r} is not text or json"])


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


class Redacting(logging.Formatter):
    """Wraps a formatter: the formatted record, traceback included, with no secret in it."""

    def __init__(self, inner: logging.Formatter, secrets: Iterable[str]) -> None:
        super().__init__()
        self.inner = inner
        # Longest first, so a secret that contains another is replaced whole.
        self.secrets = sorted({s for s in secrets if len(s) >= 8}, key=len, reverse=True)

    def format(self, record: logging.LogRecord) -> str:
        text = self.inner.format(record)
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def secrets_of(value: object, depth: int = 0) -> list[str]:
    """Every `SecretStr` value in the settings (tokens, keys; nested sections included)."""
    if isinstance(value, SecretStr):
        return [value.get_secret_value()]
    if depth > 6:
        return []
    if isinstance(value, BaseModel):
        value = dict(value)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [s for item in value for s in secrets_of(item, depth + 1)]
    return []


def configure_logging(
    level: str | None = None,
    fmt: str | None = None,
    *,
    default_level: str = "INFO",
    secrets: Iterable[str] = (),
    stream: TextIO | None = None,
) -> logging.Handler:
    """Send every record at `level` and above (the libraries' chatter at WARNING unless DEBUG)
    to `stream` (stderr) in one format. Calling it again replaces what it set up before.
    Raises LogSettingError for a level or format that is not one of ours."""
    chosen = chosen_level(level, default_level)
    form = chosen_format(fmt)
    reset_logging()
    inner: logging.Formatter = JsonLines() if form == "json" else logging.Formatter(TEXT_FORMAT)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(Redacting(inner, secrets))
    setattr(handler, _MARK, True)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(chosen)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(chosen if chosen == "DEBUG" else "WARNING")
    return handler


def reset_logging() -> None:
    """Remove the handler `configure_logging` added (tests; a second configuration)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _MARK, False)]:
        root.removeHandler(handler)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.NOTSET)
