"""What the references read and what the arbiter reads of them (DESIGN §5).

A reference gets the arbiter's context (the same excerpts; it has no workspace) under the
reference prompt. The arbiter gets the answers in the seeded order under neutral labels R1…Rn,
each quoted (so nothing in an answer can pass for a section of the prompt) and cut to one length
budget, with every model and vendor name masked: the arbiter weighs what was said, not who said
it. The tally is shown too, with what an overruled unanimous tally requires.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from rooms.judge.quoting import quoted
from rooms.references.panel import Panel

ANSWER_LIMIT = 4000  # characters of one answer in the arbiter's prompt; the full text is stored
MASK = "[a model]"
# Names of model makers and model families; a reference that names itself is masked too.
VENDOR_NAMES = (
    "anthropic",
    "claude",
    "openai",
    "chatgpt",
    "gpt",
    "codex",
    "google",
    "gemini",
    "deepmind",
    "meta",
    "llama",
    "mistral",
    "mixtral",
    "deepseek",
    "qwen",
    "alibaba",
    "grok",
    "xai",
    "cohere",
    "command-r",
    "sonnet",
    "opus",
    "haiku",
    "o1",
    "o3",
    "o4-mini",
)


def reference_prompt(instructions: str, context: str) -> str:
    return f"{instructions.strip()}\n\n---\n\n{context.strip()}\n"


def mask_names(text: str, names: Iterable[str]) -> str:
    """`text` with each name (and each vendor name) replaced by MASK, as whole words, any case."""
    return _name_pattern(frozenset(n.strip() for n in names if n.strip())).sub(MASK, text)


@functools.lru_cache(maxsize=64)
def _name_pattern(names: frozenset[str]) -> re.Pattern[str]:
    words = sorted({*names, *VENDOR_NAMES}, key=len, reverse=True)
    # A name and the version parts that follow it ("claude-x-1", "gpt-9o") are masked whole.
    return re.compile(
        r"(?<![A-Za-z0-9])(?:"
        + "|".join(re.escape(w) for w in words)
        + r")(?:[-_.:/][A-Za-z0-9.]+)*(?![A-Za-z0-9])",
        re.IGNORECASE,
    )


def arbiter_section(panel: Panel) -> str:
    """The "## Reference opinions" section of the arbiter's prompt; "" when none answered (the
    arbiter is then told nothing about references, so it cannot cite one)."""
    answered = panel.answered
    if not answered:
        return ""
    names = [n for o in panel.opinions for n in (o.name, o.model)]
    lines = [
        "## Reference opinions",
        f"{len(answered)} other model{'s' if len(answered) > 1 else ''} read the same context "
        "and answered, in a random order, under neutral labels. Cite the ones you use by label "
        "(" + ", ".join(panel.labels) + ") in `references_cited`; there are no other labels.",
        f"Their verdicts: {panel.tally.describe()}.",
    ]
    unanimous = panel.tally.unanimous
    if unanimous:
        lines.append(
            f"They were unanimous for {unanimous}. If you rule otherwise, say why in "
            "`override_reason` (or an 'Override reason:' line): what they missed."
        )
    for opinion in answered:
        text = _bounded(mask_names(opinion.text.strip(), names))
        lines += ["", f"### {opinion.label}", quoted(text)]
    return "\n".join(lines)


def _bounded(text: str) -> str:
    if len(text) <= ANSWER_LIMIT:
        return text
    return f"{text[:ANSWER_LIMIT]}\n[… {len(text) - ANSWER_LIMIT} more characters cut]"
