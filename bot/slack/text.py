"""Slack text in both directions: mrkdwn from people to plain text, agent Markdown to mrkdwn.

Inbound: Slack sends `<@U123>` mentions, `<#C1|general>` channels, `<https://x|label>` links and
`&amp;` / `&lt;` / `&gt;` escapes. Prompts and the shared command parser get plain text: the
bot's own mention is removed (it only says the message is addressed to us), other references
become readable words.

Outbound: everything an agent or a person wrote is escaped first, so their text can never
become a Slack control sequence (`<!channel>`, `<@U…>` pings, fake links), and its control
characters are shown, not kept (rooms/judge/quoting.py `visible`); then the common Markdown
forms are turned into their mrkdwn spelling. A Markdown link shows its real target, never a
label over it (`label (<target>)`). Code (fenced or inline) is left as is.
"""

from __future__ import annotations

import re

from rooms.judge.quoting import visible

_REFERENCE = re.compile(r"<([^<>]*)>")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`[^`\n]+`)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_BOLD_UNDERSCORE = re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+")
# Only web and mail links become links; `javascript:` and friends stay visible text.
_LINK = re.compile(r"\[([^\[\]\n]+)\]\(((?:https?://|mailto:)[^\s()<>|]+)\)")


def mentions_of(text: str, user_id: str | None) -> bool:
    """Whether the raw Slack text mentions `user_id` (`<@U123>` or `<@U123|name>`)."""
    if not user_id:
        return False
    return re.search(rf"<@{re.escape(user_id)}(?:\|[^>]*)?>", text) is not None


def to_plain(text: str, bot_user_id: str | None = None) -> str:
    """Slack message text as plain text: the bot's mention removed, references spelled out,
    escapes undone."""

    def reference(match: re.Match[str]) -> str:
        inner = match.group(1)
        target, _, label = inner.partition("|")
        if target.startswith("@"):
            if bot_user_id and target[1:] == bot_user_id:
                return ""
            return "@" + (label or target[1:])
        if target.startswith("#"):
            return "#" + (label or target[1:])
        if target.startswith("!"):
            if target.startswith("!subteam^"):
                return label or "@" + target.removeprefix("!subteam^")
            return "@" + (label or target[1:].split("^")[0])
        address = target.removeprefix("mailto:")
        if label and label != address:
            return f"{label} ({target})"
        return address

    plain = _REFERENCE.sub(reference, text)
    plain = plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return "\n".join(line.rstrip() for line in plain.strip().splitlines()).strip()


def escape(text: str) -> str:
    """Slack's three escapes: nothing written by someone else can form a `<…>` sequence."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_mrkdwn(markdown: str) -> str:
    """Agent Markdown as Slack mrkdwn, escaped. Fenced code blocks pass through unchanged
    (escaped only), and so does inline code."""
    out: list[str] = []
    fence: str | None = None
    for line in visible(markdown).split("\n"):
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
                out.append("```")
            else:
                out.append(escape(line))
            continue
        if match:
            fence = match.group(1)
            rest = line[match.end() :].strip()
            # Slack ignores the info string (```python): drop it rather than show it as code.
            out.append("```" if not rest or rest.isidentifier() else "```" + escape(rest))
            continue
        out.append(_line(line))
    return "\n".join(out)


def _line(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        return f"*{_inline(heading.group(1))}*"
    bullet = _BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}• {_inline(line[bullet.end() :])}"
    return _inline(line)


def _shown_link(match: re.Match[str]) -> str:
    """A Markdown link with its real target in sight: `label (<target>)`, or the bare `<target>`
    when the label says just that. Never `<target|label>`: a label such as a trusted URL over
    another target (`[https://github.com/…](https://evil.example/x)`) would be a spoofed link."""
    label, target = match.group(1).strip(), match.group(2)
    if label.rstrip("/") in (target.rstrip("/"), target.removeprefix("mailto:")):
        return f"<{target}>"
    return f"{label} (<{target}>)"


def _inline(text: str) -> str:
    parts = _INLINE_CODE.split(text)
    for i, part in enumerate(parts):
        if i % 2:  # inline code: escaped, not restyled
            parts[i] = escape(part)
            continue
        part = escape(part)
        part = _LINK.sub(_shown_link, part)
        part = _BOLD.sub(r"*\1*", part)
        part = _BOLD_UNDERSCORE.sub(r"*\1*", part)
        parts[i] = _STRIKE.sub(r"~\1~", part)
    return "".join(parts)
