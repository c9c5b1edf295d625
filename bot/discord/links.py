"""Agent Markdown for Discord, with every link's real target in sight.

Discord renders masked links, `[label](target)`, in messages a bot or a webhook posts and in
embeds: a label such as a trusted URL (`[https://github.com/acme/app/pull/7](https://evil.example/x)`)
would stand over another target. Outside code, each masked link becomes `label (<target>)`, or
`<target>` when the label is the target (the angle brackets only keep Discord from previewing
it), and any `](` still left (a form not read here: nested brackets, a link inside a label) is
broken with a backslash, so Discord renders no masked link at all. Control characters and
direction overrides are shown, not kept (rooms/judge/quoting.py `visible`), as everywhere else.
"""

from __future__ import annotations

import re

from rooms.judge.quoting import visible

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`[^`\n]+`)")
# Discord's own grammar is looser than CommonMark's: one level of brackets in the label, the
# target optionally in <…>, an optional "title".
_MASKED = re.compile(
    r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(\s*<?([^\s()<>]+)>?(?:\s+\"[^\"\n]*\")?\s*\)"
)


def _shown(match: re.Match[str]) -> str:
    label, target = match.group(1).strip(), match.group(2)
    if label.rstrip("/") in (target.rstrip("/"), target.removeprefix("mailto:")):
        return f"<{target}>"
    return f"{label} (<{target}>)"


def _unmask_text(text: str) -> str:
    parts = _INLINE_CODE.split(text)
    for i in range(0, len(parts), 2):  # the odd parts are inline code: links do not render there
        parts[i] = _MASKED.sub(_shown, parts[i]).replace("](", "]\\(")
    return "".join(parts)


def unmask(text: str) -> str:
    """`text` with no masked link left outside code, and its control characters visible."""
    out: list[str] = []
    fence: str | None = None
    for line in visible(text).split("\n"):
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            out.append(line)
        elif match:
            fence = match.group(1)
            out.append(line)
        else:
            out.append(_unmask_text(line))
    return "\n".join(out)
