"""The arbiter asks for tests before ruling (DESIGN §5, §9): the pair's `resolving` phase.

When a deadlock is a dispute about what the code does, the arbiter's structured ruling may name
the question in its `resolve` field instead of ruling on it. That ruling is not applied or
counted: the task goes to `resolving`, where the resolve machine (rooms/resolve) runs over the
turns that follow — positions, discriminating tests, the tests run in the workspace — and then
back to `arbitration`, where a fresh arbiter turn reads the result (quoted, in its own section)
and rules with it in hand. Every conclusion goes back to the arbiter, a failed or undecided
resolve included: the arbiter, not the resolve, decides what the pair does next (an undecided
one usually means ESCALATE, with every position kept).

A request is taken at most once per arbitration (a second one in the same cycle is ignored and
the ruling applied as given) and at most `resolve.from_arbiter` times per task; past that, the
ruling is applied as given and the room is told why. The resolve's state is never stored as such:
it is replayed from the task's turns after the arbiter turn that asked (as rooms/phased does for
the protocols), so it survives a crash or a takeover exactly as the store has it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rooms.base.model import GroupPolicy, Ruling, Turn
from rooms.base.records import Change
from rooms.base.words import ARBITER, CEILING, OWNER, RESOLVING_PREFIX, REVIEWER, is_resolving
from rooms.core.escalations import ask as ask_people
from rooms.core.outputs import post, turn_end
from rooms.core.protocol import Step, TurnStart
from rooms.core.turns import RunOutcome
from rooms.judge.history import History
from rooms.judge.quoting import quoted
from rooms.judge.verdicts import parse_ruling
from rooms.pair import states
from rooms.phased.deliberation import Ask, Conclusion, Reply
from rooms.phased.protocol import all_answered, ask_spec, over_ceiling, reply_of, reply_of_run
from rooms.resolve import machine
from rooms.resolve.limits import NAME as RESOLVE
from rooms.resolve.limits import ResolveLimits
from rooms.resolve.state import ResolveState
from runners.protocol import BUDGET, RunSpec

ASKED = "RESOLVE"  # the marker of the arbiter turn that asked for tests
_CONTEXT_CHARS = 2000  # of each side's last turn, in what the positions are told
_RESULT_CHARS = 8000  # of the result in the arbiter's prompt (the record is stored in full)


@dataclass(frozen=True)
class Run:
    """The resolve the arbiter asked for, as the turns since its request have it."""

    asked: Turn  # the arbiter turn that asked
    state: ResolveState
    pending: list[Reply]  # replies of the current phase so far
    conclusion: Conclusion | None  # set once the resolve has ended


def resolve_limits(policy: GroupPolicy) -> ResolveLimits:
    """The group's resolve limits: the pair's resolving phase runs under them too."""
    return policy.limits(RESOLVE, ResolveLimits)


def current(history: History, limits: ResolveLimits) -> Run | None:
    """The latest resolve the arbiter asked for (None: none was asked)."""
    asked = next(
        (t for t in reversed(history.done) if t.role == ARBITER and t.marker == ASKED), None
    )
    if asked is None:
        return None
    question = parse_ruling(asked.output, asked.structured).resolve
    state = machine.start(question, _context(history, asked))
    pending: list[Reply] = []
    finished = [
        t
        for t in history.turns
        if t.seq > asked.seq and is_resolving(t.role) and t.status in ("done", "failed")
    ]
    for t in finished:
        pending.append(replace(reply_of(t), key=t.role.removeprefix(RESOLVING_PREFIX)))
        if all_answered(machine.plan(state, limits), pending):
            state, _, conclusion = machine.advance(state, pending, limits)
            pending = []
            if conclusion is not None:
                return Run(asked, state, [], conclusion)
    return Run(asked, state, pending, None)


def wanted(step: Step, ruling: Ruling) -> str | None:
    """Why an arbiter's request for tests is not taken ("" when it is; None: none was asked)."""
    if not ruling.readable or not ruling.resolve:
        return None
    history, limits = step.history, resolve_limits(step.policy)
    last_ruling = max((v.turn_seq for v in history.verdicts), default=0)
    asks = [t for t in history.done if t.role == ARBITER and t.marker == ASKED]
    if any(t.seq > last_ruling for t in asks):
        return "the tests it asked for in this arbitration have run"
    if len(asks) >= limits.from_arbiter:
        return f"the {limits.from_arbiter} runs of tests allowed for this task are used"
    return ""


def ask_for_tests(step: Step, turn: Turn, run: RunOutcome, ruling: Ruling) -> Change:
    """The arbiter's request taken: not a ruling (nothing applied or counted); to `resolving`."""
    text = (
        "⚖️ Before ruling, the arbiter asks for tests to settle what the code does:\n"
        f"{quoted(ruling.resolve)}\n"
        "The positions are stated, tests that tell them apart are designed and run in the "
        "workspace (read-only), and the arbiter then rules with the results."
    )
    return Change(
        step.task.id,
        step.now,
        expect_version=step.task.version,
        expect_lease=step.owner,
        turn=turn_end(turn, run, step.now, marker=ASKED),
        event=states.RESOLVE,
        failures="reset",
        outbox=[post(step.room, turn, text, key="resolve", persona="tribunal")],
    )


def begin(step: Step) -> TurnStart:
    run = current(step.history, resolve_limits(step.policy))
    ask = _next_ask(run, step) if run is not None else None
    # No ask due while resolving (a bug, or the request turn lost): the run that starts fails
    # cleanly in `spec`, and `decide` takes the task back to the arbiter.
    return TurnStart(RESOLVING_PREFIX + (ask.key if ask is not None else "none"))


def spec(step: Step, turn: Turn) -> RunSpec:
    run = current(step.history, resolve_limits(step.policy))
    key = turn.role.removeprefix(RESOLVING_PREFIX)
    asks = machine.plan(run.state, resolve_limits(step.policy)) if run is not None else []
    ask = next((a for a in asks if a.key == key), None)
    if ask is None:
        raise ValueError(f"no resolve run is due for {key!r}")
    return ask_spec(step, turn, ask)


def decide(step: Step, turn: Turn, run: RunOutcome) -> Change:
    """One resolving run's outcome: the next phase, or back to the arbiter with the result."""
    task, limits = step.task, resolve_limits(step.policy)
    change = Change(
        task.id,
        step.now,
        expect_version=task.version,
        expect_lease=step.owner,
        turn=turn_end(turn, run, step.now),
        failures="reset",
    )
    if run.failed and run.failure()[0] == BUDGET:
        return _ceiling_change(step, change, "the task's budget is spent")
    # The step's history has this turn as it began (running): not yet one of the replies.
    before = current(step.history, limits)
    asks = machine.plan(before.state, limits) if before is not None else []
    key = turn.role.removeprefix(RESOLVING_PREFIX)
    if before is None or key not in {a.key for a in asks}:
        change.event = states.RESOLVED  # nothing is due: never loop, the arbiter rules now
        change.outbox.append(
            post(step.room, turn, "⚠️ The tests could not go on; the arbiter rules without them.")
        )
        return change
    pending = [*before.pending, reply_of_run(key, run)]
    if all_answered(asks, pending):
        _, posts, conclusion = machine.advance(before.state, pending, limits)
        change.outbox += [
            post(step.room, turn, p.text, key=f"post:{i}", persona=p.persona)
            for i, p in enumerate(posts)
        ]
        if conclusion is not None:
            change.event = states.RESOLVED
            note = "⚖️ The arbiter now rules with these results."
            change.outbox.append(post(step.room, turn, note, key="back", persona="tribunal"))
            return change
    over = over_ceiling(step, run)
    if over is not None:
        return _ceiling_change(step, change, over.reason)
    return change


def section(history: History, limits: ResolveLimits) -> str:
    """The result the arbiter asked for, for its prompt (see `result`)."""
    found = result(history, limits)
    if found is None:
        return ""
    question, text = found
    return "\n\n".join(
        [
            "## The tests you asked for",
            f"You asked: {question}",
            "What the engine found (positions and tests are agents' words, quoted; each result "
            "is what the command did, not what anyone reported):",
            quoted(_cut(text, _RESULT_CHARS)),
            "Rule now with these results in hand; another request for tests is not taken in "
            "this arbitration. If they did not settle it, say what the people must decide.",
        ]
    )


def record_lines(history: History, limits: ResolveLimits) -> list[str]:
    """The result, for the ruling's decision record (in full: the record is a file)."""
    found = result(history, limits)
    if found is None:
        return []
    question, text = found
    return ["## The tests the arbiter asked for", f"Question: {question}", quoted(text)]


def result(history: History, limits: ResolveLimits) -> tuple[str, str] | None:
    """(the question, the summary and record) of the resolve the current arbitration asked for;
    None when there is none: none was asked, it has not ended, or a ruling came since (an
    earlier cycle's result is in that ruling's decision record)."""
    run = current(history, limits)
    if run is None or run.conclusion is None:
        return None
    if any(v.turn_seq > run.asked.seq for v in history.verdicts):
        return None
    c = run.conclusion
    return " ".join(run.state.question.split()), f"{c.summary}\n\n{c.record}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n[… cut; the full record is stored]"


def _next_ask(run: Run, step: Step) -> Ask | None:
    if run.conclusion is not None:
        return None
    answered = {r.key for r in run.pending}
    asks = machine.plan(run.state, resolve_limits(step.policy))
    return next((a for a in asks if a.key not in answered), None)


def _ceiling_change(step: Step, change: Change, reason: str) -> Change:
    change.event = CEILING
    change.escalation = ask_people(
        step.task,
        step.room,
        step.policy,
        table=states.TABLE,
        kind=CEILING,
        question="the task reached a ceiling while the arbiter's tests ran. Continue with "
        "another budget of the same size?",
        reason=reason,
    )
    return change


def _context(history: History, asked: Turn) -> str:
    """What the positions are told of the dispute: the arbiter's reasons and each side's last
    turn before the request, quoted (agents' words)."""
    parts = []
    reasons = parse_ruling(asked.output, asked.structured).reasons
    if reasons:
        parts.append("The arbiter:\n" + quoted(reasons[:_CONTEXT_CHARS]))
    for role in (OWNER, REVIEWER):
        last = next(
            (t for t in reversed(history.done) if t.role == role and t.seq < asked.seq), None
        )
        if last is not None:
            parts.append(f"The {role}'s last turn:\n" + quoted(last.output[:_CONTEXT_CHARS]))
    return "\n\n".join(parts)
