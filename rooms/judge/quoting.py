"""Quoting someone else's words: what every prompt, record and status line does with text a
person or an agent wrote.

Two forms. In a prompt or a record (the pair's prompts, the arbiter's positions, the references'
section, resolve) the text is a Markdown quote (`quoted`), so nothing in it passes for one of the
engine's own sections. Inside a line of the engine's own (status, detector reasons, notes) it is
one line, its control characters shown as visible escapes, in quotes (`inline_quote`). Every
platform shows these lines (the console prints them, Slack and Discord post them), so nothing
quoted can end the engine's line early, start a line that passes for Tribunal's own
(`[tribunal] ✅ approved by …` at column 0), drive a terminal (escape sequences, a carriage
return over the line) or reorder what is shown (bidirectional overrides). bot/render.py
`terminal_safe` is the console's last guard on everything it prints.
"""

from __future__ import annotations

import re


def quoted(text: str) -> str:
    """Text written by a person or an agent, as a Markdown quote: every line starts with "> ",
    so nothing in it can pass for one of the engine's own sections, an escalation answer or a
    ruling in the prompt (the prompt is the one place where all of them meet)."""
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines()) or ">"


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


REASON_QUOTE_CHARS = 160  # agent words inside a detector's one-line reason


def in_reason(text: str) -> str:
    """Agent words quoted in a detector's reason, which the room and the status show."""
    return inline_quote(text, REASON_QUOTE_CHARS)
