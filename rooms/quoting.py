"""Text written by an agent or a person, inside a line of the engine's own: on one line, its
control characters shown as visible escapes, in quotes. Every platform shows these lines (the
console prints them, Slack and Discord post them), so nothing quoted can end the engine's line
early, start a line that passes for Tribunal's own (`[tribunal] ✅ approved by …` at column 0),
drive a terminal (escape sequences, a carriage return over the line) or reorder what is shown
(bidirectional overrides). bot/render.py `terminal_safe` is the console's last guard on
everything it prints; this is where the engine itself quotes.
"""

from __future__ import annotations

import re

# C0 and C1 controls but tab and newline, and the invisible direction marks and overrides that
# make text read differently from its order.
_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with its control characters (but tab and newline) and direction overrides shown
    as escapes (`\\x1b`, `\\u202e`), never obeyed; what it already made visible stays as is."""
    return _HIDDEN.sub(_escape, text)


def one_line(text: str) -> str:
    """`text` on one line: whitespace runs (newlines too) as one space, controls visible."""
    return visible(" ".join(text.split()))


def inline_quote(text: str, limit: int = 300) -> str:
    """`text` as one quoted line of at most `limit` characters inside the quotes."""
    flat = one_line(text)
    return f"“{flat}”" if len(flat) <= limit else f"“{flat[: limit - 1]}…”"
