"""The console's printing side (bot/console): what a room's messages, progress edits and
cards look like in a pipe and on a terminal of a given width. No engine: the platform is
driven with the messages the engine would send."""

from __future__ import annotations

import io

from bot.console.screen import ConsolePlatform, columns, fit
from rooms.base.model import Action, Card, Outbound, RoomRef

ROOM1 = RoomRef("console", "local", "1")


async def test_a_redelivered_message_is_printed_once() -> None:
    out = io.StringIO()
    platform = ConsolePlatform(out)
    message = Outbound(ROOM1, "DONE\nall good", persona="owner", outbox_id=41)
    first = await platform.deliver(message)
    again = await platform.deliver(message)
    assert first == again and first is not None
    assert out.getvalue().count("[owner] DONE") == 1
    other = await platform.deliver(Outbound(ROOM1, "DONE\nall good", persona="owner", outbox_id=42))
    assert other != first and out.getvalue().count("[owner] DONE") == 2


async def test_progress_edits_when_piped_are_one_line_per_change() -> None:
    out = io.StringIO()
    platform = ConsolePlatform(out, tty=False)
    progress = await platform.deliver(Outbound(ROOM1, "owner is working", persona="owner"))
    for text in ("reading a.py", "reading a.py", "running tests"):
        edited = await platform.deliver(Outbound(ROOM1, text, persona="owner", edit_of=progress))
        assert edited == progress
    assert out.getvalue() == (
        "[owner] owner is working\n[owner] reading a.py\n[owner] running tests\n"
    )
    assert "\x1b" not in out.getvalue()  # no terminal codes in a pipe


async def test_progress_edits_on_a_terminal_rewrite_the_status_line() -> None:
    out = io.StringIO()
    platform = ConsolePlatform(out, tty=True)
    progress = await platform.deliver(Outbound(ROOM1, "working", persona="reviewer"))
    await platform.deliver(Outbound(ROOM1, "running tests", persona="reviewer", edit_of=progress))
    assert out.getvalue() == "[reviewer] working\n\x1b[1A\r\x1b[K[reviewer] running tests\n"
    # Once something else was printed, an edit is a new line rather than a rewrite far above.
    await platform.deliver(Outbound(ROOM1, "note", outbox_id=3))
    await platform.deliver(Outbound(ROOM1, "still testing", persona="reviewer", edit_of=progress))
    assert out.getvalue().endswith("[tribunal] note\n[reviewer] still testing\n")


async def test_escalation_buttons_are_remembered_and_explained() -> None:
    out = io.StringIO()
    platform = ConsolePlatform(out)
    actions = (Action("approve", "Approve", "9", "primary"), Action("reject", "Reject", "9"))
    await platform.deliver(Outbound(ROOM1, "May I?", persona="arbiter", actions=actions))
    assert platform.latest_escalation == "9"
    assert out.getvalue() == (
        "[arbiter] May I?\n  answer: /approve (Approve) · /reject (Reject) · or type a reply\n"
    )


# -- a terminal: the prompt, narrow widths ------------------------------------------------------


def terminal(output: str, width: int) -> list[str]:
    """The rows a terminal `width` columns wide shows after `output`: text wraps at the width,
    "\\x1b[1A" moves up one row, "\\r" to the first column, "\\x1b[K" clears to the end of the
    row. Wide characters (⏳) take two columns."""
    rows: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(output):
        if output.startswith("\x1b[1A", i):
            row, i = max(row - 1, 0), i + 4
            continue
        if output.startswith("\x1b[K", i):
            del rows[row][col:]
            i += 3
            continue
        char, i = output[i], i + 1
        if char == "\r":
            col = 0
            continue
        if char == "\n" or col + columns(char) > width:
            row, col = row + 1, 0
            if len(rows) <= row:
                rows.append([])
            if char == "\n":
                continue
        cells = [char] + [""] * (columns(char) - 1)
        line = rows[row] + [" "] * max(0, col - len(rows[row]))
        line[col : col + len(cells)] = cells
        rows[row], col = line, col + len(cells)
    return ["".join(r) for r in rows]


async def test_at_a_narrow_terminal_the_progress_line_does_not_repeat_the_answer() -> None:
    out = io.StringIO()
    platform = ConsolePlatform(out, tty=True, columns=lambda: 40)
    answer = "DONE — added the README with the install steps and a usage example"
    progress = await platform.deliver(
        Outbound(ROOM1, "⏳ owner is working (turn 1): reading the tests", persona="owner")
    )
    for text in (f"⏳ owner is working (turn 1): {answer}", "owner DONE (turn 1, 2 steps)"):
        await platform.deliver(Outbound(ROOM1, text, persona="owner", edit_of=progress))
    await platform.deliver(Outbound(ROOM1, answer, persona="owner", outbox_id=7))
    shown = terminal(out.getvalue(), 40)
    # One status line, rewritten in place, then the answer itself (wrapped over its rows).
    assert shown[0] == "[owner] owner DONE (turn 1, 2 steps)"
    assert "".join(shown[1:]).startswith("[owner] DONE — added the README")
    assert "".join(shown).count("added the README") == 1
    assert all(columns(row) <= 40 for row in shown)


async def test_a_wide_terminal_keeps_the_whole_progress_line() -> None:
    out = io.StringIO()
    platform = ConsolePlatform(out, tty=True, columns=lambda: 200)
    await platform.deliver(Outbound(ROOM1, "⏳ owner is working: " + "x" * 150, persona="owner"))
    assert out.getvalue() == "[owner] ⏳ owner is working: " + "x" * 150 + "\n"


def test_fit_counts_wide_characters_and_marks_the_cut() -> None:
    assert fit("short", 10) == "short"
    assert fit("⏳ abcdefgh", 6) == "⏳ ab…"
    assert columns(fit("⏳" * 10, 7)) <= 7
    assert fit("abc", 3) == "abc" and fit("abcd", 3) == "ab…"


async def test_on_a_terminal_the_prompt_stays_below_the_output() -> None:
    out = io.StringIO()
    platform = ConsolePlatform(out, tty=True, prompt="alice> ", columns=lambda: 80)
    platform.write("Tribunal console, you are alice; a new room. /help for commands.")
    progress = await platform.deliver(Outbound(ROOM1, "⏳ owner is working", persona="owner"))
    await platform.deliver(Outbound(ROOM1, "owner DONE", persona="owner", edit_of=progress))
    await platform.deliver(Outbound(ROOM1, "DONE\nadded it", persona="owner", outbox_id=1))
    assert terminal(out.getvalue(), 80) == [
        "Tribunal console, you are alice; a new room. /help for commands.",
        "[owner] owner DONE",
        "[owner] DONE",
        "  added it",
        "alice> ",
    ]
    # The person types a line (the terminal echoes it and moves on): it stays on screen.
    out.write("/status\n")
    platform.typed()
    platform.write("no task yet: type one")
    platform.show_prompt()
    assert terminal(out.getvalue(), 80)[-3:] == [
        "alice> /status",
        "no task yet: type one",
        "alice> ",
    ]


async def test_a_pipe_gets_no_prompt() -> None:
    out = io.StringIO()
    platform = ConsolePlatform(out, tty=False, prompt="alice> ")
    platform.write("hello")
    platform.show_prompt()
    assert out.getvalue() == "hello\n"


async def test_a_card_prints_its_text_once_and_a_private_reply_prints_as_usual() -> None:
    out = io.StringIO()
    platform = ConsolePlatform(out)
    card = Card("ruling", "Ruling: REVISE", (("Reasons", "the reviewer is right"),))
    text = "⚖️ Ruling: REVISE\nthe reviewer is right"
    await platform.deliver(Outbound(ROOM1, text, persona="arbiter", outbox_id=1, card=card))
    await platform.deliver(
        Outbound(ROOM1, "bob: only approvers can answer", outbox_id=2, private_to="bob")
    )
    assert out.getvalue() == (
        "[arbiter] ⚖️ Ruling: REVISE\n  the reviewer is right\n"
        "[tribunal] bob: only approvers can answer\n"
    )
