"""What the console room shows: each posted message once, progress as one status line.

A message the engine posts is printed labelled by persona (`render.plain`); its `card`, where it
has one, is the structured form of the same text, so only the text is printed, and a reply meant
for one person (`private_to`) is printed like any other: the console has one user. A progress
message edited in place is a status line: on a terminal it is cut to the terminal's width and
rewritten where it stands, so a narrow terminal does not pile up a copy of it per edit; in a pipe
each change is one new line, with no terminal codes. On a terminal with `prompt` set, the prompt
is shown again below whatever was printed, so it is clear when (and as whom) to type.
"""

from __future__ import annotations

import itertools
import shutil
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from bot import render
from rooms.base.model import Outbound

_CLEAR_LINE = "\r\x1b[K"
_UP_AND_CLEAR = "\x1b[1A\r\x1b[K"


@dataclass
class _Printed:
    message_id: str
    persona: str
    text: str


def _terminal_columns() -> int:
    return shutil.get_terminal_size((100, 24)).columns


@dataclass
class ConsolePlatform:
    """rooms.base.ports.Platform for a terminal: prints each message once, edits as status lines."""

    out: TextIO
    tty: bool = False
    prompt: str = ""  # shown after output on a terminal; "" for none (pipes, tests)
    columns: Callable[[], int] = _terminal_columns  # the terminal's width, asked on each print
    latest_escalation: str | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _by_outbox: dict[int, str] = field(default_factory=dict)
    _messages: dict[str, _Printed] = field(default_factory=dict)
    _last_line_of: str | None = None  # message id whose one-line status is the last line shown
    _prompt_shown: bool = False

    async def deliver(self, message: Outbound) -> str | None:
        if message.outbox_id and message.outbox_id in self._by_outbox:
            return self._by_outbox[message.outbox_id]  # a redelivery: already on screen
        if message.edit_of is not None and message.edit_of in self._messages:
            self._edit(self._messages[message.edit_of], message)
            return message.edit_of
        message_id = f"console-{next(self._ids)}"
        self._messages[message_id] = _Printed(message_id, message.persona, message.text)
        if message.outbox_id:
            self._by_outbox[message.outbox_id] = message_id
        text = render.plain(message)
        escalation = render.escalation_id(message.actions)
        if escalation is not None:
            self.latest_escalation = escalation
            text += "\n" + render.answer_hint(message.actions)
        if not message.outbox_id and "\n" not in text:
            text = self._fit(text)  # a progress line (posted directly): editable in place
        self.write(text)
        if "\n" not in text and columns(text) < self._width():
            self._last_line_of = message_id
        return message_id

    def _edit(self, printed: _Printed, message: Outbound) -> None:
        if message.text == printed.text:
            return  # nothing new to show: keep piped output free of repeats
        printed.text = message.text
        line = render.plain(Outbound(room=message.room, text=message.text, persona=printed.persona))
        line = self._fit(line.splitlines()[0] if line else "")
        fits = columns(line) < self._width()
        if self.tty and self._last_line_of == printed.message_id and fits:
            self._emit(line, rewrite=True)  # the status line is edited in place
        else:
            self._emit(line)
        self._last_line_of = printed.message_id if fits else None

    def write(self, text: str) -> None:
        """Print a line of the console's own; its control characters are shown, never obeyed
        (idempotent: what `render` already made safe stays as it is)."""
        self._emit(render.terminal_safe(text))
        self._last_line_of = None

    def say(self, text: str) -> None:
        """The engine's text asked for by the console itself (`/status`, the status shown at
        start), shown as a posted message of Tribunal's is: labelled, indented, made safe."""
        self.write(render.labelled("tribunal", text))

    def typed(self) -> None:
        """The person pressed Enter: the prompt line is now their line, the cursor below it."""
        self._prompt_shown = False
        self._last_line_of = None

    def show_prompt(self) -> None:
        if self.tty and self.prompt and not self._prompt_shown:
            self.out.write(self.prompt)
            self.out.flush()
            self._prompt_shown = True

    def _emit(self, text: str, *, rewrite: bool = False) -> None:
        head = _CLEAR_LINE if self._prompt_shown else ""  # the prompt goes, and comes back below
        self._prompt_shown = False
        self.out.write(head + (_UP_AND_CLEAR if rewrite else "") + text + "\n")
        self.out.flush()
        self.show_prompt()

    def _width(self) -> int:
        return self.columns() if self.tty else 1 << 30

    def _fit(self, line: str) -> str:
        """On a terminal, a status line cut to less than its width: a line that wraps cannot be
        rewritten in place (one line up reaches only its last row)."""
        return fit(line, self._width() - 1) if self.tty else line


def _char_columns(char: str) -> int:
    if unicodedata.combining(char) or char in "\u200b\u200d\ufe0f":
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def columns(text: str) -> int:
    """How many terminal columns `text` takes (wide characters such as ⏳ take two)."""
    return sum(_char_columns(c) for c in text)


def fit(text: str, width: int) -> str:
    """`text` cut to at most `width` columns, ending in "…" when it was cut."""
    if columns(text) <= width:
        return text
    used, kept = 1, []  # the ellipsis takes one column
    for char in text:
        used += _char_columns(char)
        if used > width:
            break
        kept.append(char)
    return "".join(kept) + "…"
