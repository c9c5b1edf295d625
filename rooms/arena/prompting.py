"""The prompt of each arena actor, built from the run's state.

An expert's prompt has a fixed part (persona, question, briefing, panel) and only the last
round's messages to them or to everyone, each cut to a bounded length: what an expert turn
costs stays flat as the thread grows (tests/bench/bench_arena.py measures it).
"""

from __future__ import annotations

import json

from rooms.arena.evidence import score
from rooms.arena.limits import ArenaLimits
from rooms.arena.state import ArenaState, Seat

BRIEFING_CHARS = 12_000  # the compiled briefing, at most
FINDING_CHARS = 4_000  # one researcher's findings in the briefing
MESSAGE_CHARS = 1_500  # one message quoted in another expert's prompt
STANCE_CHARS = 200


def moderator_prompt(state: ArenaState, limits: ArenaLimits) -> str:
    return (
        f"## The question\n\n{state.question}\n\n"
        f"Propose a panel of {limits.panel_min}–{limits.panel_max} expert personas (exactly one "
        f"devil's advocate) and {limits.researchers_min}–{limits.researchers_max} research briefs."
    )


def researcher_prompt(state: ArenaState, focus: str) -> str:
    where = (
        "The question is about the code in the workspace: read it (read-only)."
        if state.code_question
        else "Use what you know and what the workspace holds, if it is relevant."
    )
    return f"## The question\n\n{state.question}\n\n## Your focus\n\n{focus}\n\n{where}"


def compile_briefing(state: ArenaState) -> str:
    parts = ["## Arena briefing", ""]
    for i, focus in enumerate(state.researchers, start=1):
        key = f"researcher:{i}"
        found = state.findings.get(key)
        parts.append(f"### {focus}")
        parts.append(
            _cut(found, FINDING_CHARS) if found else "(this researcher failed; no findings)"
        )
        parts.append("")
    return _cut("\n".join(parts), BRIEFING_CHARS)


def expert_prompt(state: ArenaState, seat: Seat, limits: ArenaLimits) -> str:
    role = (
        "\n\nYou are the panel's **devil's advocate**: find the strongest case against where the "
        "panel is heading. You hold a veto the others must answer."
        if seat.devil
        else ""
    )
    panel = "\n".join(
        f"- **{s.slug}** — {s.name} ({s.angle})"
        + (" [devil's advocate]" if s.devil else "")
        + (" [left out]" if s.out else "")
        + (" [final position sent]" if s.final else "")
        + f": {_cut(s.stance or s.expected or '—', STANCE_CHARS)}"
        for s in state.seats
        if s.slug != seat.slug
    )
    text = (
        f"# You are {seat.name} ({seat.slug})\n\n## Your persona\n\n{seat.persona}{role}\n\n"
        f"## The question\n\n{state.question}\n\n{state.briefing}\n\n"
        f"## The other experts\n\n{panel}\n\n"
    )
    if seat.stance:
        text += f"## Your position so far\n\n{_cut(seat.stance, STANCE_CHARS * 2)}\n\n"
    inbox = _inbox(state, seat.slug)
    if state.round == 0:
        text += "## Begin\n\nState your position to everyone, with evidence.\n\n"
    else:
        text += (
            f"## Since your last turn (round {state.round})\n\n{inbox or '(nothing for you)'}\n\n"
        )
    if state.veto == "standing" and state.veto_round:
        text += f"## The devil's advocate's veto\n\n{state.veto_reason}\n\nAnswer it.\n\n"
    notes = state.notes.get(seat.slug, [])
    if notes:
        text += "## From the moderator\n\n" + "\n".join(f"- {n}" for n in notes) + "\n\n"
    text += f"Round {state.round + 1} of at most {limits.max_rounds}."
    return text


def synthesizer_prompt(state: ArenaState, table: str) -> str:
    moments = []
    for spoken in state.thread:
        m = spoken.message
        to = ", ".join(spoken.to) or "everyone"
        bits = [f"round {spoken.round}: {spoken.speaker} → {to} ({m.kind})"]
        if m.shifted:
            bits.append("SHIFTED")
        for c in m.challenges:
            bits.append(f"challenged {c.target}: {_cut(c.weakness, 200)}")
        if m.veto != "none":
            bits.append(f"veto {m.veto}: {_cut(m.veto_reason, 200)}")
        moments.append("- " + "; ".join(bits) + f" — {_cut(m.stance, STANCE_CHARS)}")
    contests = "\n".join(
        f"- {c.evidence}: {c.by} rates R {c.r:.2f} CL {c.cl:.2f}"
        f" (score {score(c.r, c.cl):.2f}) — {c.why}"
        for c in state.contests
    )
    return (
        f"## The question\n\n{state.question}\n\n"
        f"## Why the debate ended\n\n{state.ended_because}\n\n"
        f"## Positions and their computed trust\n\n{table}\n\n"
        f"## Contested ratings\n\n{contests or '(none)'}\n\n"
        f"## The debate, message by message\n\n"
        + "\n".join(moments[-200:])
        + "\n\n"
        + (f"## Standing veto (dissent)\n\n{state.dissent}\n\n" if state.dissent else "")
        + "Write the synthesis."
    )


def _inbox(state: ArenaState, slug: str) -> str:
    lines = []
    for spoken in state.thread:
        if spoken.round != state.round or spoken.speaker == slug:
            continue
        if spoken.to and slug not in spoken.to:
            continue
        m = spoken.message
        head = f"**{spoken.speaker}** → {'you' if spoken.to else 'everyone'} ({m.kind})"
        body = _cut(m.text, MESSAGE_CHARS)
        extra = []
        if m.evidence:
            extra.append(
                "evidence: "
                + json.dumps(
                    [[e.title, e.r, e.cl, e.load_bearing] for e in m.evidence[:8]],
                    ensure_ascii=False,
                )
            )
        for c in m.challenges:
            if c.target == slug:
                contest = f" (contests {c.evidence}: R {c.r} CL {c.cl})" if c.evidence else ""
                extra.append(f"challenges you: {_cut(c.weakness, 400)}{contest}")
        lines.append(head + "\n" + body + ("\n" + "\n".join(extra) if extra else ""))
    return "\n\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " […]"
