"""A prompt's one line per earlier turn is made from the head of the turn's output only
(rooms/pair/prompting.py `_one_line_head`), and is the same line the whole output gives."""

from __future__ import annotations

import pytest

from rooms.pair import prompting

LIMIT = prompting._LINE_CHARS
TEXTS = {
    "short": "DONE\nfixed it",
    "exactly the limit": "x" * LIMIT,
    "one over": "x" * (LIMIT + 1),
    "one long word": "y" * (50 * LIMIT),
    "words": "word " * (20 * LIMIT),
    "whitespace first": " \n\t" * (30 * LIMIT) + "then the text " * 40,
    "a word across the head's end": "a" * (4 * LIMIT - 3) + " " + "b" * 10 + " c" * LIMIT,
    "1 MB of lines": "\n".join(f"log line {i}: compiled" for i in range(50_000)),
}


@pytest.mark.parametrize("text", list(TEXTS.values()), ids=list(TEXTS))
def test_the_line_of_a_long_turn_is_the_line_of_its_whole_text(text: str) -> None:
    whole = prompting._one_line(text)
    head = prompting._one_line_head(text, LIMIT)
    assert whole.startswith(head)
    assert _shown(head) == _shown(whole)


def _shown(line: str) -> str:
    """What the prompt shows of a line (rooms/pair/prompting.py `_line`)."""
    return line[: LIMIT - 1] + "…" if len(line) > LIMIT else line
