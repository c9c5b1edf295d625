"""Slack text in and out: mentions and escapes to plain text for prompts and the shared parser;
agent Markdown to mrkdwn, with nothing anyone wrote able to become a ping or a link."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.slack.text import escape, mentions_of, to_mrkdwn, to_plain
from rooms.commands import parse

PLAIN_CASES = [
    ("<@UBOT> fix the flaky test", "fix the flaky test"),
    ("<@UBOT|tribunal> stop", "stop"),
    ("<@UBOT> ask <@U024BE7LH> about it", "ask @U024BE7LH about it"),
    ("<@UBOT> ask <@U024BE7LH|bob>", "ask @bob"),
    ("see <#C123|general> and <#C999>", "see #general and #C999"),
    (
        "read <https://example.com/a?b=1&amp;c=2|the docs>",
        "read the docs (https://example.com/a?b=1&c=2)",
    ),
    ("read <https://example.com>", "read https://example.com"),
    ("mail <mailto:a@b.c|a@b.c>", "mail a@b.c"),
    ("<!here> heads up", "@here heads up"),
    ("<!subteam^S1|@backend> look", "@backend look"),
    ("a &lt;b&gt; &amp;&amp; c", "a <b> && c"),
    ("&amp;lt; stays literal", "&lt; stays literal"),
    ("  <@UBOT>   \n\n", ""),
]


@pytest.mark.parametrize(("slack", "plain"), PLAIN_CASES)
def test_slack_text_becomes_plain_text(slack: str, plain: str) -> None:
    assert to_plain(slack, "UBOT") == plain


@pytest.mark.parametrize(
    ("slack", "command", "rest"),
    [
        ("<@UBOT> stop", "stop", ""),
        ("<@UBOT>   status", "status", ""),
        ("<@UBOT|tribunal> approve", "approve", ""),
        ("<@UBOT> reject: too risky", "reject", "too risky"),
        ("<@UBOT> help", "help", ""),
        ("<@UBOT> stop the server from crashing", "stop", "the server from crashing"),
    ],
)
def test_commands_reach_the_shared_parser_as_the_console_types_them(
    slack: str, command: str, rest: str
) -> None:
    parsed, after, _ = parse(to_plain(slack, "UBOT"))
    assert (parsed, after) == (command, rest)


def test_only_the_bots_own_mention_counts_as_addressed_to_it() -> None:
    assert mentions_of("hey <@UBOT> look", "UBOT")
    assert mentions_of("<@UBOT|tribunal>", "UBOT")
    assert not mentions_of("<@UBOTX> look", "UBOT")
    assert not mentions_of("@UBOT look", "UBOT")  # plain text, not a mention
    assert not mentions_of("<@UBOT>", None)


MRKDWN_CASES = [
    ("**bold** and __also__", "*bold* and *also*"),
    ("~~gone~~", "~gone~"),
    ("# Summary", "*Summary*"),
    ("### Findings ###", "*Findings*"),
    ("- one\n* two\n  + three", "• one\n• two\n  • three"),
    ("see [the PR](https://example.com/pr/1)", "see the PR (<https://example.com/pr/1>)"),
    ("[https://example.com/a](https://example.com/a)", "<https://example.com/a>"),
    ("[bob@example.com](mailto:bob@example.com)", "<mailto:bob@example.com>"),
    ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
    ("`**not bold**` but **bold**", "`**not bold**` but *bold*"),
    ("```python\n**x** <y>\n```", "```\n**x** &lt;y&gt;\n```"),
    ("a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"),
    ("<!channel> <@U1> <https://x|y>", "&lt;!channel&gt; &lt;@U1&gt; &lt;https://x|y&gt;"),
]


@pytest.mark.parametrize(("markdown", "mrkdwn"), MRKDWN_CASES)
def test_agent_markdown_becomes_mrkdwn(markdown: str, mrkdwn: str) -> None:
    assert to_mrkdwn(markdown) == mrkdwn


@given(st.text())
def test_nothing_written_can_open_a_slack_sequence(text: str) -> None:
    """Whatever an agent writes, the mrkdwn holds no `<` or `>` of its own: the only angle
    brackets are links we made from `[label](https://…)`."""
    out = to_mrkdwn(text)
    stripped = out
    for start in range(out.count("<")):
        del start
        i = stripped.find("<")
        j = stripped.find(">", i)
        assert i >= 0 and j > i
        assert stripped[i + 1 :].startswith(("http://", "https://", "mailto:"))
        stripped = stripped[:i] + stripped[j + 1 :]
    assert ">" not in stripped


# Spoofed links (issue 24, item 17): a trusted URL, or something like one, over another target.
# Each renders with its real target in sight and no labelled Slack link at all.
SPOOFS = [
    (
        "[https://github.com/acme/app/pull/7](https://evil.example/x)",
        "https://github.com/acme/app/pull/7 (<https://evil.example/x>)",
    ),
    (
        "see [github.com/acme/app](https://evil.example/x) now",
        "see github.com/acme/app (<https://evil.example/x>) now",
    ),
    (  # nested brackets: the inner link shows its target, the outer stays text
        "[[https://github.com/acme](https://evil.example/a)](https://evil.example/b)",
        "[https://github.com/acme (<https://evil.example/a>)](https://evil.example/b)",
    ),
    ("[a [b] c](https://evil.example/x)", "[a [b] c](https://evil.example/x)"),
    (  # a Slack link written out by the agent is text, not a link
        "<https://evil.example/x|https://github.com/acme/app/pull/7>",
        "&lt;https://evil.example/x|https://github.com/acme/app/pull/7&gt;",
    ),
    (  # full-width brackets are no Markdown link and stay text
        "［https://github.com/acme］（https://evil.example/x）",
        "［https://github.com/acme］（https://evil.example/x）",
    ),
    (  # a label that is a Slack link of its own, escaped
        "[<https://github.com|github>](https://evil.example/x)",
        "&lt;https://github.com|github&gt; (<https://evil.example/x>)",
    ),
    ("**[trusted](https://evil.example/x)**", "*trusted (<https://evil.example/x>)*"),
    (  # a direction override is shown, not obeyed
        "[x](https://evil.example/x\u202e)",
        "x (<https://evil.example/x\\u202e>)",
    ),
]


@pytest.mark.parametrize(("markdown", "mrkdwn"), SPOOFS)
def test_a_link_always_shows_its_real_target(markdown: str, mrkdwn: str) -> None:
    assert to_mrkdwn(markdown) == mrkdwn


_LINK_TARGET = st.from_regex(r"https://[a-z]{1,8}\.example/[a-z0-9]{0,8}", fullmatch=True)


@given(st.text(), _LINK_TARGET, st.text())
def test_no_slack_link_carries_a_label(label: str, target: str, around: str) -> None:
    """Whatever the label and the text around it: every Slack link in the mrkdwn is a bare
    `<target>`, which Slack shows as its target, and the target is in the text."""
    out = to_mrkdwn(f"{around}[{label}]({target}){around}")
    links = re.findall(r"<([^<>]*)>", out)
    assert all("|" not in link for link in links), out
    if target in links:
        assert f"<{target}>" in out


@given(st.text())
def test_escape_then_plain_gives_the_text_back(text: str) -> None:
    """What we escape on the way out reads back as the same text on the way in."""
    if "<" in text or ">" in text:
        return  # raw brackets are never in Slack text: Slack sends them escaped
    assert (
        to_plain(escape(text))
        == "\n".join(line.rstrip() for line in text.strip().splitlines()).strip()
    )
