"""Quoting someone else's words: what every prompt and record does with text a person or an
agent wrote (the pair's prompts, the arbiter's positions, the references' section, resolve)."""

from __future__ import annotations


def quoted(text: str) -> str:
    """Text written by a person or an agent, as a Markdown quote: every line starts with "> ",
    so nothing in it can pass for one of the engine's own sections, an escalation answer or a
    ruling in the prompt (the prompt is the one place where all of them meet)."""
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines()) or ">"
