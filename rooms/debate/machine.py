"""The debate as a machine over its state: frame → briefs → questions → answers → referee.

Each phase asks both sides at once (the referee alone at the end). An actor whose run fails or
whose answer cannot be read is asked once more, told why; failing again ends the debate as
failed, saying who and why. The referee's report is checked for completeness and sent back once
with what it lacks; still incomplete, the record lists the gaps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel

from rooms.debate.completeness import advocate_gaps, challenger_gaps, report_gaps
from rooms.debate.cross import answered, asked
from rooms.debate.frame import FRAME_LABELS, check_frame
from rooms.debate.limits import SIDES, DebateLimits, Side
from rooms.debate.outputs import (
    ADVOCATE_SCHEMA,
    ANSWERS_SCHEMA,
    CHALLENGER_SCHEMA,
    FRAME_SCHEMA,
    QUESTIONS_SCHEMA,
    REFEREE_SCHEMA,
    AdvocateBrief,
    Answers,
    ChallengerBrief,
    Frame,
    FrameStatement,
    Questions,
    RefereeReport,
)
from rooms.debate.prompting import (
    answers_prompt,
    brief_prompt,
    frame_prompt,
    other,
    questions_prompt,
    referee_prompt,
)
from rooms.debate.record import DebateRecord, render
from rooms.debate.rubric import adjudicate
from rooms.debate.state import DebateState
from rooms.judge.structured import StructuredError, read_object
from rooms.phased.deliberation import RETRIES, Ask, Conclusion, Post, Reply, charge, retry_note

ROLE = {"advocate": "debate-advocate", "challenger": "debate-challenger"}
REFEREE = "referee"
REFEREE_ROLE = "debate-referee"
FRAME_ROLE = "debate-frame"
# The actors' prompt files (prompts/<role>.md), which a group may replace.
PROMPT_ROLES = (FRAME_ROLE, *ROLE.values(), REFEREE_ROLE)
_REPORT_RESENT = "referee:gaps"


def start(decision: str, authority: str) -> DebateState:
    proposed = Frame(
        decision=" ".join(decision.split()),
        shared_data="the group's workspace (read-only) and this thread",
        authority=authority,
    )
    return DebateState(decision=proposed.decision, proposed=proposed)


def plan(state: DebateState, limits: DebateLimits) -> list[Ask]:
    """The runs the current phase still needs."""
    asks = []
    if state.phase == "frame":
        for side in SIDES:
            if side not in state.frames:
                asks.append(_ask(state, side, FRAME_ROLE, frame_prompt(state, side), FRAME_SCHEMA))
    elif state.phase == "briefs":
        for side in SIDES:
            if _brief(state, side) is None:
                schema = ADVOCATE_SCHEMA if side == "advocate" else CHALLENGER_SCHEMA
                asks.append(_ask(state, side, ROLE[side], brief_prompt(state, side), schema))
    elif state.phase == "questions":
        for side in SIDES:
            if side not in state.questions:
                prompt = questions_prompt(state, side, limits)
                asks.append(_ask(state, side, ROLE[side], prompt, QUESTIONS_SCHEMA))
    elif state.phase == "answers":
        for side in SIDES:
            if side not in state.answers:
                prompt = answers_prompt(state, side, limits)
                asks.append(_ask(state, side, ROLE[side], prompt, ANSWERS_SCHEMA))
    elif state.phase == "referee":
        prompt = referee_prompt(state, limits, state.report_gaps)
        asks.append(_ask(state, REFEREE, REFEREE_ROLE, prompt, REFEREE_SCHEMA))
    return asks


def advance(
    state: DebateState, replies: Sequence[Reply], limits: DebateLimits
) -> tuple[DebateState, list[Post], Conclusion | None]:
    s = state.model_copy(deep=True)
    posts: list[Post] = []
    for reply in replies:
        charge(s, reply)
        problem = _take(s, reply, limits)
        if problem is None:
            s.problems.pop(reply.key, None)
            continue
        s.attempts[reply.key] = s.attempts.get(reply.key, 0) + 1
        if s.attempts[reply.key] > RETRIES:
            s.failure = f"the {reply.key}'s {_what(state.phase)} could not be used twice: {problem}"
            s.phase = "failed"
            return s, [Post("tribunal", f"⚠️ The debate stopped: {s.failure}.")], _failed(s)
        s.problems[reply.key] = problem
        posts.append(
            Post(
                "tribunal",
                f"↻ The {reply.key}'s answer could not be used ({problem}); asking once more.",
            )
        )
    if plan(s, limits) and s.phase != "referee":
        return s, posts, None
    return _next_phase(s, posts, limits)


def _take(s: DebateState, reply: Reply, limits: DebateLimits) -> str | None:
    """Store what `reply` brings for the current phase; the problem when it brings nothing."""
    if reply.error is not None:
        return f"the run failed: {reply.error}"
    try:
        if s.phase == "frame":
            s.frames[reply.key] = _read(reply, FrameStatement)
        elif s.phase == "briefs":
            if reply.key == "advocate":
                s.advocate = _read(reply, AdvocateBrief)
            else:
                s.challenger = _read(reply, ChallengerBrief)
        elif s.phase == "questions":
            s.questions[reply.key] = _read(reply, Questions).questions
        elif s.phase == "answers":
            s.answers[reply.key] = _read(reply, Answers).answers
        elif s.phase == "referee":
            s.report = _read(reply, RefereeReport)
    except StructuredError as exc:
        return str(exc)
    return None


M = TypeVar("M", bound=BaseModel)


def _read(reply: Reply, model: type[M]) -> M:
    return read_object(reply.output, reply.structured, model)


def _next_phase(
    s: DebateState, posts: list[Post], limits: DebateLimits
) -> tuple[DebateState, list[Post], Conclusion | None]:
    if s.phase == "frame":
        check = check_frame(s.proposed, s.frames["advocate"], s.frames["challenger"])
        if check.agreed:
            posts.append(Post("tribunal", "🧭 Both sides agree on the frame. Opening briefs next."))
        else:
            lines = [
                f"- {FRAME_LABELS[d.field]}: advocate {d.advocate or '—'}"
                f" · challenger {d.challenger or '—'}"
                for d in check.differences
            ]
            posts.append(
                Post(
                    "tribunal",
                    "🧭 **The sides disagree on the frame** — a finding in itself, recorded "
                    "for the decision authority:\n" + "\n".join(lines) + "\nThe debate goes "
                    "on on the proposed frame.",
                )
            )
        s.phase = "briefs"
    elif s.phase == "briefs":
        for side in SIDES:
            posts.append(Post(side, f"**Opening brief ({side})**\n\n" + _summary(_brief(s, side))))
        s.phase = "questions"
    elif s.phase == "questions":
        for side in SIDES:
            put = asked(s.questions.get(side, []), limits.questions_per_side)
            listed = (
                "\n".join(f"{e.number}. {e.question.text}" for e in put.exchanges)
                or "(no questions)"
            )
            posts.append(Post(side, f"**Questions to the {other(side)}**\n{listed}"))
        s.phase = "answers"
    elif s.phase == "answers":
        for side in SIDES:
            put = answered(
                asked(s.questions.get(other(side), []), limits.questions_per_side),
                s.answers.get(side, []),
            )
            listed = (
                "\n".join(f"{e.number}. {e.answer or '(not answered)'}" for e in put.exchanges)
                or "(nothing to answer)"
            )
            posts.append(Post(side, f"**Answers to the {other(side)}**\n{listed}"))
        s.phase = "referee"
    elif s.phase == "referee":
        if s.report is None:
            return s, posts, None
        guardrails = [g.name for g in s.challenger.guardrails] if s.challenger else []
        gaps = report_gaps(s.report, guardrails)
        if gaps and not s.attempts.get(_REPORT_RESENT):
            s.attempts[_REPORT_RESENT] = 1
            s.report_gaps = gaps
            s.report = None
            posts.append(
                Post(
                    "tribunal",
                    "↻ The referee's report is incomplete ("
                    + "; ".join(gaps)
                    + "); sent back once.",
                )
            )
            return s, posts, None
        s.report_gaps = gaps
        s.phase = "done"
        conclusion = conclude(s, limits)
        posts.append(Post("referee", conclusion.summary))
        return s, posts, conclusion
    return s, posts, None


def conclude(s: DebateState, limits: DebateLimits) -> Conclusion:
    assert s.report is not None and s.advocate is not None and s.challenger is not None
    outcome = adjudicate(
        s.report.advocate_scores.model_dump(), s.report.challenger_scores.model_dump(), limits
    )
    check = check_frame(s.proposed, s.frames["advocate"], s.frames["challenger"])
    gaps = tuple(
        [f"advocate's brief: {g}" for g in advocate_gaps(s.advocate)]
        + [f"challenger's brief: {g}" for g in challenger_gaps(s.challenger)]
        + [f"referee's report: {g}" for g in s.report_gaps]
    )
    record = DebateRecord(
        decision=s.decision,
        frame=check,
        advocate=s.advocate,
        challenger=s.challenger,
        to_challenger=answered(
            asked(s.questions.get("advocate", []), limits.questions_per_side),
            s.answers.get("challenger", []),
        ),
        to_advocate=answered(
            asked(s.questions.get("challenger", []), limits.questions_per_side),
            s.answers.get("advocate", []),
        ),
        report=s.report,
        outcome=outcome,
        gaps=gaps,
    )
    options = tuple(o.option for o in s.report.options)[:4]
    lines = [
        f"⚖️ **Debate concluded.** Preferred: the **{outcome.preferred}** — {outcome.reason}.",
        f"Confidence: {s.report.confidence.level} — "
        f"{s.report.confidence.reason or '(no reason given)'}",
    ]
    if not check.agreed:
        lines.append("The sides disagreed on the frame (see the record).")
    if options:
        lines.append("Options: " + "; ".join(options))
    if s.report.irreconcilable:
        lines.append(
            "The referee found the positions irreconcilable: the people in the room decide."
        )
    return Conclusion(
        title=f"Debate: {s.decision}",
        summary="\n".join(lines),
        record=render(record, limits),
        needs_people=s.report.irreconcilable,
        question="The debate's positions are irreconcilable. Which way should it go?"
        if s.report.irreconcilable
        else "",
        options=options if len(options) >= 2 else ("Follow the advocate", "Follow the challenger"),
    )


def _failed(s: DebateState) -> Conclusion:
    return Conclusion(
        title=f"Debate: {s.decision}",
        summary=f"⚠️ The debate could not finish: {s.failure}.",
        record=f"# Debate: {s.decision}\n\nThe debate stopped: {s.failure}.\n",
        failed=True,
    )


def _ask(s: DebateState, key: str, role: str, prompt: str, schema: dict[str, object]) -> Ask:
    problem = s.problems.get(key)
    return Ask(key, role, prompt + (retry_note(problem) if problem else ""), dict(schema))


def _brief(s: DebateState, side: Side) -> AdvocateBrief | ChallengerBrief | None:
    return s.advocate if side == "advocate" else s.challenger


def _summary(brief: BaseModel | None) -> str:
    if brief is None:
        return "(none)"
    lines = []
    for name, value in brief.model_dump().items():
        label = name.replace("_", " ").capitalize()
        if isinstance(value, list):
            items = [
                v if isinstance(v, str) else f"{v.get('name')}: {v.get('status')}" for v in value
            ]
            lines.append(f"**{label}:** " + ("; ".join(items) if items else "—"))
        else:
            lines.append(f"**{label}:** {value or '—'}")
    return "\n".join(lines)


def _what(phase: str) -> str:
    return {
        "frame": "frame statement",
        "briefs": "brief",
        "questions": "questions",
        "answers": "answers",
        "referee": "report",
    }.get(phase, "answer")
