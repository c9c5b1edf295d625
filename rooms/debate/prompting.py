"""The prompt of each debate actor, built from the run's state. The agents read each other
through these prompts (from the store), never by scraping the chat."""

from __future__ import annotations

import json

from rooms.debate.cross import answered, asked
from rooms.debate.frame import FRAME_FIELDS, FRAME_LABELS, check_frame
from rooms.debate.limits import DebateLimits, Side
from rooms.debate.outputs import Frame
from rooms.debate.state import DebateState

SIDE_TEXT = {
    "advocate": "You are the **advocate**: you argue for acting on the decision.",
    "challenger": "You are the **challenger**: you argue for discipline against acting.",
}


def other(side: Side) -> Side:
    return "challenger" if side == "advocate" else "advocate"


def frame_text(frame: Frame) -> str:
    return "\n".join(
        f"- **{FRAME_LABELS[n]}:** {getattr(frame, n) or '(not stated)'}" for n in FRAME_FIELDS
    )


def agreed_frame(state: DebateState) -> Frame:
    check = check_frame(state.proposed, state.frames["advocate"], state.frames["challenger"])
    return check.frame


def frame_prompt(state: DebateState, side: Side) -> str:
    return (
        f"{SIDE_TEXT[side]}\n\n## The decision\n\n{state.decision}\n\n"
        f"## The proposed frame\n\n{frame_text(state.proposed)}\n\n"
        "Accept this frame, or state the frame your side would debate and why."
    )


def brief_prompt(state: DebateState, side: Side) -> str:
    return (
        f"{SIDE_TEXT[side]}\n\n## The decision\n\n{state.decision}\n\n"
        f"## The frame\n\n{frame_text(agreed_frame(state))}\n{_frame_dispute(state)}\n"
        "Write your opening brief, answering every part of your template."
    )


def questions_prompt(state: DebateState, side: Side, limits: DebateLimits) -> str:
    return (
        f"{SIDE_TEXT[side]}\n\n## The decision\n\n{state.decision}\n\n"
        f"## Your brief\n\n{_brief(state, side)}\n\n"
        f"## The {other(side)}'s brief\n\n{_brief(state, other(side))}\n\n"
        f"Cross-examination: ask the {other(side)} up to {limits.questions_per_side} questions "
        "(an assumption and its evidence, a data gap, a model risk, an execution dependency). "
        "Each gets one answer and no follow-up."
    )


def answers_prompt(state: DebateState, side: Side, limits: DebateLimits) -> str:
    put = asked(state.questions.get(other(side), []), limits.questions_per_side)
    listed = "\n".join(f"{e.number}. ({e.question.kind}) {e.question.text}" for e in put.exchanges)
    return (
        f"{SIDE_TEXT[side]}\n\n## The decision\n\n{state.decision}\n\n"
        f"## Your brief\n\n{_brief(state, side)}\n\n"
        f"## The {other(side)}'s questions to you\n\n{listed or '(none)'}\n\n"
        "Answer each question once, by its number."
    )


def referee_prompt(state: DebateState, limits: DebateLimits, gaps: list[str]) -> str:
    rounds = []
    for asker in ("advocate", "challenger"):
        answerer = other(asker)  # type: ignore[arg-type]
        put = answered(
            asked(state.questions.get(asker, []), limits.questions_per_side),
            state.answers.get(answerer, []),
        )
        lines = [f"### The {asker} asks, the {answerer} answers", ""]
        for e in put.exchanges:
            lines.append(f"{e.number}. ({e.question.kind}) {e.question.text}")
            lines.append(f"   Answer: {e.answer or '(not answered)'}")
        rounds.append("\n".join(lines))
    weights = ", ".join(f"{k} {v}" for k, v in limits.weights.items())
    guardrails = [g.name for g in state.challenger.guardrails] if state.challenger else []
    text = (
        f"## The decision\n\n{state.decision}\n\n"
        f"## The frame\n\n{frame_text(agreed_frame(state))}\n{_frame_dispute(state)}\n"
        f"## The advocate's brief\n\n{_brief(state, 'advocate')}\n\n"
        f"## The challenger's brief\n\n{_brief(state, 'challenger')}\n\n"
        "## Cross-examination\n\n" + "\n\n".join(rounds) + "\n\n"
        f"Score both sides 0–10 on each criterion (weights: {weights}), then write the report. "
        f"Give a status for each guardrail the challenger named: {', '.join(guardrails) or 'none'}."
    )
    if gaps:
        text += "\n\n## Your previous report was incomplete\n\nIt lacked: " + "; ".join(gaps)
    return text


def _brief(state: DebateState, side: Side) -> str:
    brief = state.advocate if side == "advocate" else state.challenger
    if brief is None:
        return "(none)"
    return "```json\n" + json.dumps(brief.model_dump(), indent=1, ensure_ascii=False) + "\n```"


def _frame_dispute(state: DebateState) -> str:
    check = check_frame(state.proposed, state.frames["advocate"], state.frames["challenger"])
    if check.agreed:
        return ""
    lines = ["", "**The sides disagree on the frame** (reported to the room):"]
    lines += [
        f"- {FRAME_LABELS[d.field]}: advocate says {d.advocate!r}, challenger says {d.challenger!r}"
        for d in check.differences
    ]
    return "\n".join(lines) + "\n"
