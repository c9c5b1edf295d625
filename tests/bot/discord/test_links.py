"""Masked links in Discord (bot/discord/links.py, issue 24 item 17): whatever an agent writes,
no link renders under a label; each shows its real target. A table of spoofing forms, and a
property over any text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.discord.links import unmask

SPOOFS = [
    (
        "[https://github.com/acme/app/pull/7](https://evil.example/x)",
        "https://github.com/acme/app/pull/7 (<https://evil.example/x>)",
    ),
    ("see [the PR](https://example.com/pr/1)", "see the PR (<https://example.com/pr/1>)"),
    ("[https://example.com/a](https://example.com/a)", "<https://example.com/a>"),
    ("[github.com](<https://evil.example/x>)", "github.com (<https://evil.example/x>)"),
    ('[github.com](https://evil.example/x "GitHub")', "github.com (<https://evil.example/x>)"),
    ("[a [b] c](https://evil.example/x)", "a [b] c (<https://evil.example/x>)"),
    (  # nested: the outer link is read, its label's own `](` broken
        "[[https://github.com](https://evil.example/a)](https://evil.example/b)",
        "[https://github.com]\\(https://evil.example/a) (<https://evil.example/b>)",
    ),
    ("[x](javascript:alert(1))", "[x]\\(javascript:alert(1))"),
    (  # Slack's spelling is text in Discord
        "<https://evil.example/x|https://github.com>",
        "<https://evil.example/x|https://github.com>",
    ),
    (  # full-width brackets are no link
        "［https://github.com］（https://evil.example/x）",
        "［https://github.com］（https://evil.example/x）",
    ),
    ("`[a](https://x.example)` stays code", "`[a](https://x.example)` stays code"),
    ("```\n[a](https://x.example)\n```", "```\n[a](https://x.example)\n```"),
    ("[x](https://evil.example/x)\x1b[2K", "x (<https://evil.example/x>)\\x1b[2K"),
]


@pytest.mark.parametrize(("markdown", "shown"), SPOOFS)
def test_a_link_always_shows_its_real_target(markdown: str, shown: str) -> None:
    assert unmask(markdown) == shown


_TARGET = st.from_regex(r"https://[a-z]{1,8}\.example/[a-z0-9]{0,8}", fullmatch=True)


def _outside_code(text: str) -> str:
    lines, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            lines.append(re.sub(r"`[^`\n]+`", "", line))
    return "\n".join(lines)


@given(st.text(), _TARGET, st.text())
def test_no_masked_link_survives(label: str, target: str, around: str) -> None:
    """Outside code nothing is left that Discord reads as a masked link (it needs `](`), and
    a link that was read shows its target."""
    out = unmask(f"{around}[{label}]({target}){around}")
    assert "](" not in _outside_code(out).replace("]\\(", ""), out
    if f"(<{target}>)" not in out and f"<{target}>" not in out:
        assert target in out  # not read as a link: still there, as text
