"""Plain-text rendering of what the engine posts, shared by the platform adapters.

`split_text` cuts a long message at a platform's limit on line boundaries and never inside a
fenced code block without closing and reopening the fence (DESIGN §7); `long_text_parts` is the
one rule, for every platform, of when a text goes as its opening piece plus a file;
`plain` and `answer_hint` are the console room's view of a message and of an escalation's
buttons.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rooms.base.model import Action, Outbound
from rooms.judge.quoting import visible

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
COMMAND_OF_ACTION = {"approve": "/approve", "reject": "/reject", "choose": "/choose"}


def label(persona: str) -> str:
    return f"[{persona}]"


def terminal_safe(text: str) -> str:
    """Control characters other than newline and tab, and direction overrides: an agent's or a
    person's text must not drive the terminal (erase the indent, move the cursor, retitle the
    window) and so pass for another role's line. They are shown as visible escapes instead, by
    the one sanitiser the engine's own quoting uses (rooms/judge/quoting.py)."""
    return visible(text)


def plain(message: Outbound, *, indent: str = "  ") -> str:
    """`[persona] first line` and the rest indented, so turns stay apart in a terminal."""
    return labelled(message.persona, message.text, indent=indent)


def labelled(persona: str, text: str, *, indent: str = "  ") -> str:
    """`text` as `persona` says it in a terminal: labelled, its later lines indented (so none
    of them starts at column 0 and passes for another message), control characters visible.
    Whatever the console shows of the engine's text goes through here."""
    lines = [terminal_safe(line) for line in text.splitlines()] or [""]
    head = f"{label(persona)} {lines[0]}".rstrip()
    return "\n".join([head, *(f"{indent}{line}".rstrip() for line in lines[1:])])


def answer_hint(actions: tuple[Action, ...]) -> str:
    """How to answer an escalation in the console: its buttons as commands, or a reply."""
    choices = [_command(a) for a in actions if a.action in COMMAND_OF_ACTION]
    return "  answer: " + " · ".join([*choices, "or type a reply"])


def _command(action: Action) -> str:
    """A button as what to type: `/reject (Reject)`; an option as its number, `2 (2. mock)`."""
    if action.action == "choose":
        number = action.value.rpartition(".")[2]
        return f"{number} or /choose {number} ({action.label})"
    return f"{COMMAND_OF_ACTION[action.action]} ({action.label})"


def escalation_id(actions: tuple[Action, ...]) -> str | None:
    """The escalation the buttons answer (their value; a choice's before its option number),
    or None for a message without any."""
    for action in actions:
        if action.action in COMMAND_OF_ACTION:
            return action.value.partition(".")[0]
    return None


def split_text(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters, cut after the last newline that fits (a line
    longer than the limit is cut hard). A piece that would end inside a fenced code block is
    closed with the fence, and the next piece reopens it, so every piece renders on its own.
    Without fences, the pieces join back to exactly `text`."""
    if limit < 16:
        raise ValueError("limit must be at least 16 characters")
    longest = max((len(m.group(1)) for m in map(_FENCE.match, text.splitlines()) if m), default=0)
    reserve = longest + 1  # room for "\n" + the closing fence
    repair = longest > 0 and reserve <= limit // 4  # absurdly long fences: cut plainly
    pieces: list[str] = []
    rest = text
    reopen = ""
    while rest:
        rest = reopen + rest
        if len(rest) <= limit:
            pieces.append(rest)
            break
        room = limit - reserve if repair else limit
        window = rest[:room]
        cut = window.rfind("\n") + 1
        if cut <= len(reopen):  # nothing but the reopened fence fits before a newline
            cut = room
        piece, rest = rest[:cut], rest[cut:]
        fence = open_fence(piece) if repair else None
        if fence:
            piece += ("" if piece.endswith("\n") else "\n") + fence
            reopen = fence + "\n"
        else:
            reopen = ""
        pieces.append(piece)
    return pieces


def open_fence(text: str) -> str | None:
    """The fence marker (e.g. "```") left open at the end of `text`, or None."""
    current: str | None = None
    for line in text.splitlines():
        match = _FENCE.match(line)
        if not match:
            continue
        marker = match.group(1)
        if current is None:
            current = marker
        elif marker[0] == current[0] and len(marker) >= len(current):
            current = None
    return current


def too_long_for_messages(pieces: list[str], max_pieces: int) -> bool:
    """Whether a text split into `pieces` should go as its opening piece plus the whole text as
    a file (more pieces than a reader scrolls through), rather than as every piece."""
    return len(pieces) > max_pieces


def file_note(total_chars: int, where: str = "in the file below") -> str:
    """The line under the opening piece of a text posted whole as a file (`where` the file is:
    below it in Slack, attached to it in Discord)."""
    return f"(… {total_chars:,} characters in all: the whole text is {where}.)"


def long_text_parts(
    text: str, limit: int, max_parts: int, note: Callable[[int], str] = file_note
) -> tuple[list[str], bool]:
    """How to post `text` on a platform with a `limit` per message, the one rule for every
    platform: its pieces (split_text), or, when it would take more than `max_parts` messages
    (too_long_for_messages), its opening piece with `note(len(text))` under it, still within
    `limit`, and True: the whole text then goes as a file, so a room is never flooded by one
    output."""
    pieces = split_text(text or "(empty)", limit)
    if not too_long_for_messages(pieces, max_parts):
        return pieces, False
    tail = "\n\n" + note(len(text))
    opening = split_text(text, limit - len(tail))[0]  # a fence it cut is closed in it
    return [opening.rstrip("\n") + tail], True
