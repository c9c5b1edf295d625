"""The reference opinions as people see them: one short line each under the ruling in the room,
a section of the decision record (label, model, verdict, excerpt, tokens, cost, latency, the
seed), and the lines of `status`. Names are shown here: only the arbiter must not see them."""

from __future__ import annotations

import re

from rooms.base.model import Ruling
from rooms.base.words import VERDICTS
from rooms.references.checks import overrules
from rooms.references.panel import Opinion, Panel

LINE_EXCERPT = 100  # characters of an answer on its room line
RECORD_EXCERPT = 600  # characters of an answer in the decision record
_VERDICT_LINE = re.compile(r"^\W*(?:VERDICT\W*)?(?:" + "|".join(VERDICTS) + r")\W*$", re.IGNORECASE)


def excerpt(text: str, limit: int) -> str:
    """The answer after its verdict line, on one line, cut to `limit`."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if len(lines) > 1 and _VERDICT_LINE.match(lines[0]):
        lines = lines[1:]
    flat = " ".join(" ".join(lines).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def room_lines(panel: Panel) -> list[str]:
    """Under the ruling: who said what, one short line per reference."""
    if not panel.opinions:
        return []
    lines = [f"References ({panel.tally.describe()}; seed {panel.seed}):"]
    for o in sorted(panel.opinions, key=_shown_order):
        if o.answered:
            said = excerpt(o.text, LINE_EXCERPT)
            lines.append(
                f"- {o.label} {o.name} ({o.model}): {o.verdict or 'no verdict'} · "
                f"{o.latency_s:.1f} s · {said}"
            )
        else:
            lines.append(f"- {o.name} ({o.model}): {o.error}")
    return lines


def override_line(ruling: Ruling, panel: Panel | None) -> str | None:
    against = overrules(ruling, panel)
    if against is None:
        return None
    why = " ".join(ruling.override_reason.split()) or "(no reason given)"
    return f"Overrules the references' unanimous {against}: {why}"


def record_section(ruling: Ruling, panel: Panel | None) -> str:
    """The "## Reference opinions" section of the decision record."""
    out = ["## Reference opinions", ""]
    if panel is None or not panel.opinions:
        return "\n".join([*out, "none asked"])
    out += [
        f"Seed {panel.seed} (the order and the labels follow from it); "
        f"fan-out {panel.wall_s:.2f} s; tally: {panel.tally.describe()}.",
        "",
        "| label | reference | model | verdict | tokens in/out | cost | latency |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for o in panel.opinions:
        out.append(
            f"| {o.label or '—'} | {_cell(o.name)} | {_cell(o.model)} | "
            f"{o.verdict or ('dropped' if not o.answered else 'none')} | "
            f"{o.input_tokens}/{o.output_tokens} | ${o.cost_usd:.4f} | {o.latency_s:.2f} s |"
        )
    out.append("")
    for o in panel.opinions:
        if o.answered:
            out += [
                f"**{o.label}** ({_cell(o.name)}):",
                "",
                _quote(excerpt(o.text, RECORD_EXCERPT)),
            ]
        else:
            out += [f"**{_cell(o.name)}** dropped: {o.error}"]
        out.append("")
    line = override_line(ruling, panel)
    if line:
        out += [line, ""]
    return "\n".join(out).rstrip()


def status_lines(panel: Panel | None) -> list[str]:
    if panel is None or not panel.opinions:
        return []
    tokens = sum(o.input_tokens + o.output_tokens for o in panel.opinions)
    cost = sum(o.cost_usd for o in panel.opinions)
    lines = [
        f"References at the last ruling: {panel.tally.describe()} · seed {panel.seed} · "
        f"tokens: {tokens:,} · cost: ${cost:.4f} · fan-out {panel.wall_s:.1f} s"
    ]
    for o in panel.opinions:
        what = (o.verdict or "no verdict") if o.answered else f"dropped ({o.error})"
        lines.append(
            f"  {o.label or '—'} {o.name} ({o.model}): {what} · "
            f"{o.input_tokens + o.output_tokens:,} tokens · ${o.cost_usd:.4f} · {o.latency_s:.1f} s"
        )
    return lines


def _shown_order(o: Opinion) -> tuple[int, int]:
    return (0 if o.answered else 1, o.position)


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def _quote(text: str) -> str:
    return "> " + (text or "(empty)")
