"""Resolve as a machine over its state: positions → test design → (talk again, at most
`max_talk_rounds` in all) → the tests executed in the task's container → adjudication.

Tests decide, not rhetoric: the engine runs the designed commands itself against the workspace
(the `executor` run is the command runner's, no agent's: rooms/resolve/checks.py) and derives
each result from what it saw; the decision is computed from those (rooms.resolve.adjudicate).
An actor whose run fails or whose answer cannot be used is asked once more, told why; so is the
executor when its run fails.
"""

from __future__ import annotations

from collections.abc import Sequence

from rooms.judge.structured import StructuredError, read_object
from rooms.phased.deliberation import RETRIES, Ask, Conclusion, Post, Reply, charge, retry_note
from rooms.resolve.adjudicate import Decision, adjudicate
from rooms.resolve.checks import checks_for, observe, read_report
from rooms.resolve.limits import ResolveLimits
from rooms.resolve.outputs import POSITIONS_SCHEMA, TESTS_SCHEMA, Design, Positions
from rooms.resolve.record import render, results_post
from rooms.resolve.state import ResolveState
from rooms.resolve.talk import after_design, position_problems, select_tests

ACTORS = {"positions": "resolve-positions", "designer": "resolve-tests"}
PROMPT_ROLES = tuple(ACTORS.values())  # their prompt files, which a group may replace
EXECUTOR = "executor"  # the engine's own run of the tests (runners/command.py)
STOP_OPTION = "Stop: leave it undecided"


def start(question: str, context: str = "") -> ResolveState:
    return ResolveState(question=" ".join(question.split()), context=context)


def plan(state: ResolveState, limits: ResolveLimits) -> list[Ask]:
    if state.phase == "positions":
        return [_ask(state, "positions", _positions_prompt(state), POSITIONS_SCHEMA)]
    if state.phase == "design":
        return [_ask(state, "designer", _design_prompt(state, limits), TESTS_SCHEMA)]
    if state.phase == "execute":
        return [_execute(state, limits)]
    return []


def advance(
    state: ResolveState, replies: Sequence[Reply], limits: ResolveLimits
) -> tuple[ResolveState, list[Post], Conclusion | None]:
    s = state.model_copy(deep=True)
    posts: list[Post] = []
    for reply in replies:
        charge(s, reply)
        try:
            if reply.error is not None:
                raise StructuredError(f"the run failed: {reply.error}")
            conclusion = _take(s, reply, limits, posts)
        except StructuredError as exc:
            s.attempts[reply.key] = s.attempts.get(reply.key, 0) + 1
            if s.attempts[reply.key] > RETRIES:
                s.failure = f"the {reply.key} step could not be used twice: {exc}"
                s.phase = "failed"
                posts.append(Post("tribunal", f"⚠️ Resolve stopped: {s.failure}."))
                return s, posts, _failed(s)
            s.problems[reply.key] = str(exc)
            posts.append(
                Post(
                    "tribunal",
                    f"↻ The {reply.key} step could not be used ({exc}); asking once more.",
                )
            )
            continue
        s.problems.pop(reply.key, None)
        if conclusion is not None:
            posts.append(Post("tribunal", conclusion.summary))
            return s, posts, conclusion
    return s, posts, None


def _take(
    s: ResolveState, reply: Reply, limits: ResolveLimits, posts: list[Post]
) -> Conclusion | None:
    if s.phase == "positions":
        positions = read_object(reply.output, reply.structured, Positions).positions
        problems = position_problems(positions, limits)
        if problems:
            raise StructuredError("; ".join(problems))
        s.positions = positions
        s.talk_rounds += 1
        listed = "\n".join(f"- **{p.id}:** {p.approach}" for p in positions)
        posts.append(Post("tribunal", f"🧪 Positions (round {s.talk_rounds} of talk):\n{listed}"))
        s.phase = "design"
        return None
    if s.phase == "design":
        design = read_object(reply.output, reply.structured, Design)
        step = after_design(s.positions, design.tests, s.talk_rounds, limits)
        if step == "run":
            s.tests, s.not_run = select_tests(s.positions, design.tests, limits)
            listed = "\n".join(
                f"- **{t.id}** {t.name}: "
                + ", ".join(f"{p.position} predicts {p.outcome}" for p in t.predictions)
                for t in s.tests
            )
            posts.append(
                Post("tribunal", f"🧪 Discriminating tests to run in the workspace:\n{listed}")
            )
            s.phase = "execute"
            return None
        s.tests = list(design.tests)
        if step == "talk":
            s.talk_request = design.talk or "no test tells the positions apart yet"
            posts.append(
                Post(
                    "tribunal",
                    f"🧪 No discriminating test yet ({s.talk_request}); the positions are "
                    "stated once more.",
                )
            )
            s.phase = "positions"
            return None
        s.phase = "done"
        decision = adjudicate(s.positions, s.tests, [])
        reason = f"{s.talk_rounds} rounds of talk produced no discriminating test"
        return _conclude(s, decision, reason)
    if s.phase == "execute":
        report = read_report(reply.structured)  # the command runner's, never an agent's text
        s.results = observe(s.tests, checks_for(s.tests, limits), report)
        s.phase = "done"
        decision = adjudicate(s.positions, s.tests, s.results, s.not_run)
        posts.append(Post("tribunal", results_post(s.positions, decision)))
        return _conclude(s, decision, "")
    return None


def _conclude(s: ResolveState, decision: Decision, why_no_tests: str) -> Conclusion:
    record = render(s.question, s.positions, decision)
    if decision.winner is not None:
        winner = next(p for p in s.positions if p.id == decision.winner)
        summary = f"🧪 **Resolved: {winner.id}** — {winner.approach}. {decision.rationale}."
        if decision.dissent:
            summary += "\nDissent kept: " + "; ".join(f"{p}: {why}" for p, why in decision.dissent)
        return Conclusion(f"Resolve: {s.question}", summary, record)
    rationale = why_no_tests or decision.rationale
    summary = (
        f"🧪 **Not resolved** — {rationale}. Every position is kept for you to decide:\n"
        + "\n".join(
            f"- **{p.id}:** {p.approach}" + (f" ({p.rationale})" if p.rationale else "")
            for p in s.positions
        )
    )
    options = tuple(f"{p.id}: {p.approach}"[:200] for p in s.positions[:3]) + (STOP_OPTION,)
    return Conclusion(
        f"Resolve: {s.question}",
        summary,
        record,
        needs_people=True,
        question=decision.question
        or "The tests did not settle it. Which position should the work follow?",
        options=options,
    )


def _failed(s: ResolveState) -> Conclusion:
    return Conclusion(
        f"Resolve: {s.question}",
        f"⚠️ Resolve could not finish: {s.failure}.",
        f"# Resolve: {s.question}\n\nResolve stopped: {s.failure}.\n",
        needs_people=True,
        question="Resolve could not finish. How should it go on?",
        options=("Try again", STOP_OPTION),
        failed=True,
    )


def _ask(s: ResolveState, key: str, prompt: str, schema: dict[str, object]) -> Ask:
    problem = s.problems.get(key)
    return Ask(
        key,
        ACTORS[key],
        prompt + (retry_note(problem) if problem else ""),
        dict(schema),
    )


def _positions_prompt(s: ResolveState) -> str:
    text = f"## The question\n\n{s.question}\n"
    if s.context:
        text += f"\n## What the room said\n\n{s.context}\n"
    if s.positions and s.talk_request:
        listed = "\n".join(f"- {p.id}: {p.approach} — {p.rationale}" for p in s.positions)
        text += (
            f"\n## The positions so far\n\n{listed}\n\n## What the test designer needs\n\n"
            f"{s.talk_request}\n\nState the positions again, precisely enough to be tested."
        )
    return text


def _design_prompt(s: ResolveState, limits: ResolveLimits) -> str:
    listed = "\n".join(f"- **{p.id}:** {p.approach} — {p.rationale}" for p in s.positions)
    return (
        f"## The question\n\n{s.question}\n\n## The positions\n\n{listed}\n\n"
        f"Design up to {limits.max_tests} discriminating tests; predict PASS or FAIL for every "
        f"position ({', '.join(p.id for p in s.positions)}). Tribunal runs each command itself, "
        f"for at most {limits.test_timeout_s:g} s, with the workspace read-only."
    )


def _execute(s: ResolveState, limits: ResolveLimits) -> Ask:
    """The engine's run of the tests: their commands as checks, each with its time."""
    checks = tuple(c for c in checks_for(s.tests, limits) if c is not None)
    listed = ", ".join(c.id for c in checks)
    return Ask(EXECUTOR, "command", f"Run the tests {listed} in the workspace.", checks=checks)
