"""The arena's synthesis: a Markdown document with every section, and where it is saved
(`docs/arena/YYYY-MM-DD-<topic>.md` in the task's worktree)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from rooms.arena.catalog import Entry, Standing
from rooms.arena.outputs import SynthesisNarrative

ARENA_DIR = "docs/arena"
SECTIONS = (
    "Verdict",
    "Trust Summary",
    "Evidence Catalog",
    "Contested Evidence",
    "Debate Progression",
    "Recommendation",
    "Remaining Disagreements",
    "Trade-offs Accepted",
)
_SLUG_MAX = 60
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Synthesis:
    question: str
    experts: tuple[tuple[str, str], ...]  # (slug, name), panel order
    standings: tuple[Standing, ...]
    catalog: tuple[Entry, ...]
    narrative: SynthesisNarrative
    dissent: str = ""  # a standing veto, recorded
    ended_because: str = ""
    left_out: tuple[str, ...] = ()  # experts who fell silent or failed


def synthesis_path(topic: str, at: float) -> str:
    """Relative to the worktree. The topic becomes an ASCII slug, so no text can name another
    folder or file."""
    day = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")
    return f"{ARENA_DIR}/{day}-{topic_slug(topic)}.md"


def topic_slug(topic: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", topic).encode("ascii", "ignore").decode()
    slug = _NOT_SLUG.sub("-", ascii_text.lower()).strip("-")[:_SLUG_MAX].rstrip("-")
    return slug or "arena"


def render(s: Synthesis, at: float) -> str:
    names = dict(s.experts)
    day = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")
    status = {"consensus": "Consensus reached", "partial": "Partial consensus"}.get(
        s.narrative.status, "No consensus"
    )
    lines = [
        f"# Expert arena: {_line(s.question)}",
        "",
        f"> **Status:** {status}  ",
        f"> **Date:** {day}  ",
        f"> **Experts:** {', '.join(_line(n) for _, n in s.experts)}  ",
        "> **Decision owner:** the people in the room (the experts recommend, people decide)",
    ]
    if s.ended_because:
        lines.append(f">  \n> **Ended:** {_line(s.ended_because)}")
    lines += ["", "## Verdict", "", s.narrative.verdict, "", "## Trust Summary", ""]
    lines += [
        "| Position | Champion | Level | Trust (weakest link) | Evidence |",
        "| --- | --- | --- | --- | --- |",
    ]
    for st in s.standings:
        final = "" if st.position.final else " (last message; no final position)"
        lines.append(
            f"| {_cell(st.position.stance)}{final} | {_cell(names.get(st.position.champion, ''))}"
            f" | {st.level} | {st.trust:.2f} | {st.load_bearing} load-bearing,"
            f" {st.supporting} supporting |"
        )
    lines += ["", "L2: trust ≥ 0.7 · L1: trust ≥ 0.4 · L0: below 0.4.", ""]
    lines += ["## Evidence Catalog", ""]
    if s.catalog:
        lines += [
            "| # | Evidence | Cited by | R | CL | Score |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for e in s.catalog:
            what = _cell(e.title) + (f" ({_cell(e.source)})" if e.source else "")
            lines.append(
                f"| {e.label} | {what} | {_cell(', '.join(e.cited_by))} | {e.rating.r:.2f}"
                f" | {e.rating.cl:.2f} | {e.rating.score:.2f} |"
            )
    else:
        lines.append("No evidence was cited.")
    lines += ["", "## Contested Evidence", ""]
    contested = [e for e in s.catalog if e.contested]
    if contested:
        why = {_key(c.evidence): c.why for c in s.narrative.contested}
        lines += ["| Evidence | Ratings | Counted | Why |", "| --- | --- | --- | --- |"]
        for e in contested:
            given = "; ".join(f"{r.by}: R {r.r:.2f} CL {r.cl:.2f}" for r in e.ratings)
            reason = why.get(_key(e.title)) or "no better-justified rating named: the lowest counts"
            lines.append(
                f"| {e.label} {_cell(e.title)} | {_cell(given)} | {e.rating.by} | {_cell(reason)} |"
            )
    else:
        lines.append("No rating was contested.")
    lines += ["", "## Debate Progression", ""]
    lines += _items(s.narrative.progression, "No progression was recorded.")
    if s.left_out:
        lines += ["", "Left out (silent or failing): " + ", ".join(s.left_out) + "."]
    lines += ["", "## Recommendation", "", s.narrative.recommendation, ""]
    lines += ["## Remaining Disagreements", ""]
    disagreements = list(s.narrative.remaining_disagreements)
    if s.dissent:
        disagreements.insert(0, f"Standing veto of the devil's advocate (dissent): {s.dissent}")
    lines += _items(disagreements, "None.")
    lines += ["", "## Trade-offs Accepted", ""]
    lines += _items(s.narrative.trade_offs, "None named.")
    lines += ["", "*Experts recommend; the people in the room decide.*", ""]
    return "\n".join(lines)


def _items(items: Sequence[str], empty: str) -> list[str]:
    return [f"- {_line(item)}" for item in items] if items else [empty]


def _line(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    """One table cell: on one line, and a `|` in it cannot open another column."""
    return _line(text).replace("|", "\\|")


def _key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip("/.")
