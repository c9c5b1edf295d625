"""A protocol made of phases over a pure machine (arena, debate, resolve): the adapter between
`rooms.phased.deliberation` machines and the generic driver (rooms.core.protocol).

The machine's state is never stored as such: it is replayed from the task's finished turns, in
order (each turn is one actor's reply: its role is the actor's key, its output and structured
output what it said, a failed turn a failed reply). A phase's replies are gathered until every
run it asked for has answered, then the machine advances. So the state survives a crash or a
takeover exactly as the store has it, and nothing but the turns needs writing.

The task's status is the machine's phase; the state table lets each phase move to any other,
`done` close the task, `people` ask the humans (an escalation; their answer closes it), and
`stop` close it from anywhere. `begin_all` hands the driver every run the phase still needs, and
the driver runs them at once (rooms.core.driver.step_all); the task's ceilings hold as for the pair,
and what people write in the room reaches every actor's prompt.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from typing import Protocol as Interface

from prompts import load_prompt
from rooms.base.machine import StateTable
from rooms.base.model import Firing, GroupPolicy, Task, Turn
from rooms.base.records import Change, OutboxDraft
from rooms.base.words import ANSWER, APPROVE, CEILING, CLOSED, REJECT, STOP, WAITING_HUMAN
from rooms.core.escalations import ask as ask_people
from rooms.core.outputs import post, turn_end
from rooms.core.protocol import Step, TurnStart, decided
from rooms.core.turns import RunOutcome, build_spec
from rooms.judge.ceilings import ceiling  # the one definition of the task ceilings
from rooms.phased.deliberation import Ask, Conclusion, Post, Reply
from rooms.work import files, snapshots
from runners.protocol import RunSpec

log = logging.getLogger(__name__)
S = TypeVar("S")
DONE, PEOPLE = "done", "people"  # events: the run concluded; the people must decide
_REPLAYS_KEPT = 256
_HEARD, _HEARD_CHARS = 5, 1000  # human messages shown to each actor, and their length
CHECKS_MARGIN_S = 30.0  # a checks run's start, kills and clean-up, beyond the checks' own times
_TaskKey = tuple[int, str, float, str]  # task id, room, created at, group
_TurnKey = tuple[int, str, float, int]  # turn id, status, started at, hash of its output


class Machine(Interface, Generic[S]):
    """What a phased protocol's folder provides."""

    name: str
    command: str
    phases: tuple[str, ...]  # open phases, in order (the first is the initial status)

    def start(self, task: Task, policy: GroupPolicy) -> S: ...

    def phase(self, state: S) -> str: ...

    def plan(self, state: S, policy: GroupPolicy) -> list[Ask]: ...

    def advance(
        self, state: S, replies: Sequence[Reply], policy: GroupPolicy, now: float
    ) -> tuple[S, list[Post], Conclusion | None]: ...

    def opened_text(self, user: str) -> str: ...

    def label(self, phase: str) -> str: ...


def table_for(machine: Machine[Any]) -> StateTable:
    phases = machine.phases
    transitions: dict[str, dict[str, str]] = {}
    for phase in phases:
        moves = {other: other for other in phases if other != phase}
        moves.update({DONE: CLOSED, PEOPLE: WAITING_HUMAN, STOP: CLOSED})
        transitions[phase] = moves
    transitions[WAITING_HUMAN] = {ANSWER: CLOSED, APPROVE: CLOSED, REJECT: CLOSED, STOP: CLOSED}
    transitions[CLOSED] = {}
    actors: dict[str, str | None] = {p: machine.name for p in phases}
    actors.update({WAITING_HUMAN: None, CLOSED: None})
    return StateTable(machine.name, phases[0], transitions, actors)


@dataclass
class Replayed(Generic[S]):
    state: S
    pending: list[Reply]


class PhasedProtocol(Generic[S]):
    def __init__(self, machine: Machine[S]) -> None:
        self.machine = machine
        self.name = machine.name
        self.command: str | None = machine.command
        self.table = table_for(machine)
        # task → (the finished turns replayed, the state after them, the replies pending)
        self._replays: dict[_TaskKey, tuple[tuple[_TurnKey, ...], S, tuple[Reply, ...]]] = {}

    def opened_text(self, user: str, policy: GroupPolicy) -> str:
        return self.machine.opened_text(user)

    def label(self, status: str) -> str:
        if status in self.machine.phases:
            return self.machine.label(status)
        return {WAITING_HUMAN: "waiting for a person", CLOSED: "closed"}.get(status, status)

    def replay(self, step: Step) -> Replayed[S]:
        """The machine's state after the task's finished turns. Replaying is deterministic, so
        the state after a prefix of turns is kept (per task, a few hundred tasks at most) and
        only the turns finished since are replayed: a step costs the same late in a long arena
        as early in it."""
        m, policy = self.machine, step.policy
        finished = [t for t in step.history.turns if t.status in ("done", "failed")]
        # What identifies a replayed turn: another store's task of the same id (tests, a second
        # engine in the process) cannot pass for it.
        ids = tuple((t.id, t.status, t.started_at, hash(t.output)) for t in finished)
        key = (step.task.id, step.task.room, step.task.created_at, step.policy.name)
        cached = self._replays.get(key)
        if cached is not None and ids[: len(cached[0])] == cached[0]:
            done, state, pending = cached[0], cached[1], list(cached[2])
        else:
            done, state, pending = (), m.start(step.task, policy), []
        for turn in finished[len(done) :]:
            pending.append(reply_of(turn))
            if all_answered(m.plan(state, policy), pending):
                state, _, _ = m.advance(state, pending, policy, turn.ended_at or turn.started_at)
                pending = []
        self._replays[key] = (ids, state, tuple(pending))
        while len(self._replays) > _REPLAYS_KEPT:
            self._replays.pop(next(iter(self._replays)))
        return Replayed(state, pending)

    def _next_ask(self, step: Step) -> tuple[Replayed[S], Ask | None]:
        replayed = self.replay(step)
        answered = {r.key for r in replayed.pending}
        asks = [a for a in self.machine.plan(replayed.state, step.policy) if a.key not in answered]
        return replayed, (asks[0] if asks else None)

    async def begin_all(self, step: Step) -> list[TurnStart]:
        """Every run the phase still needs: the driver runs them at once."""
        replayed = self.replay(step)
        answered = {r.key for r in replayed.pending}
        asks = [a for a in self.machine.plan(replayed.state, step.policy) if a.key not in answered]
        return [TurnStart(a.key) for a in asks] or [TurnStart(self.name)]

    async def begin(self, step: Step) -> TurnStart:
        _, ask = self._next_ask(step)
        # No ask left while the status says someone acts: the machine's phase and the stored
        # status disagree (a bug); the turn that runs fails cleanly and the task asks the people.
        return TurnStart(ask.key if ask else self.name)

    async def spec(self, step: Step, turn: Turn) -> RunSpec:
        replayed = self.replay(step)
        ask = next(
            (a for a in self.machine.plan(replayed.state, step.policy) if a.key == turn.role), None
        )
        if ask is None:
            raise ValueError(f"no run is due for {turn.role!r} in this phase")
        return ask_spec(step, turn, ask)

    async def decide(self, step: Step, turn: Turn, run: RunOutcome) -> Change:
        m, policy, task = self.machine, step.policy, step.task
        replayed = self.replay(step)
        change = Change(
            task.id,
            step.now,
            expect_version=task.version,
            expect_lease=step.owner,
            turn=turn_end(turn, run, step.now),
        )
        if task.status not in m.phases:
            # A sibling of this run (same phase, run at once) already took the task to the
            # people or closed it: this run's outcome is kept on its turn, and moves nothing.
            return change
        asks = m.plan(replayed.state, policy)
        if not asks:  # a phase that asks for nobody cannot go on: never loop, ask the people
            change.event = PEOPLE
            change.escalation = ask_people(
                task,
                step.room,
                step.policy,
                table=self.table,
                kind="failure",
                question=f"The {self.name} cannot go on from its {task.status} phase. Close it?",
                reason=f"no run is due in the {task.status} phase",
            )
            return decided(self.table, task, change)
        pending = [*replayed.pending, reply_of_run(turn.role, run)]
        if all_answered(asks, pending):
            state, posts, conclusion = m.advance(replayed.state, pending, policy, step.now)
            change.outbox += [_post(step, turn, p, i) for i, p in enumerate(posts)]
            if conclusion is not None:
                await _conclude(step, turn, change, conclusion, self.table)
                return decided(self.table, task, change)
            if m.phase(state) != task.status:
                change.event = m.phase(state)
        over = over_ceiling(step, run)
        if over is not None:  # the same ceilings as the pair's: the people decide whether it ends
            change.event = PEOPLE
            change.escalation = ask_people(
                task,
                step.room,
                step.policy,
                table=self.table,
                kind=CEILING,
                question=f"The {self.name} reached a ceiling: {over.reason}. It stops here; "
                "its turns so far are kept. Approve or answer to close it.",
                reason=over.reason,
            )
        return decided(self.table, task, change)


def over_ceiling(step: Step, run: RunOutcome) -> Firing | None:
    """The task ceiling `run` reaches (None: none), counted as the pair counts: this turn
    included, and without the time spent waiting for people (also the pair's resolving phase)."""
    task = step.task
    return ceiling(
        step.limits,
        turns=len(step.history.turns),
        tokens=task.tokens + run.usage.tokens,
        cost_usd=task.cost_usd + run.usage.cost_usd,
        elapsed=step.now - task.created_at - step.history.waited_s,
    )


def ask_spec(step: Step, turn: Turn, ask: Ask) -> RunSpec:
    """The run spec of one machine's `ask` (also used where a machine runs inside another
    protocol: the pair's resolving phase)."""
    if ask.checks:
        return _checks_spec(step, turn, ask)
    budget_left = max(step.limits.max_cost_usd - step.task.cost_usd, 0.01)
    return build_spec(
        step.task,
        turn,
        step.policy,
        prompt=ask.prompt + _heard(step),
        system_prompt=load_prompt(ask.role, step.policy.prompt_overrides),
        resume=None,
        output_schema=ask.schema,
        budget_left_usd=budget_left,
        read_only=True,  # every deliberation actor reads; Tribunal writes what they conclude
        tokens_left=max(step.limits.max_tokens - step.task.tokens, 0),
    )


def _checks_spec(step: Step, turn: Turn, ask: Ask) -> RunSpec:
    """The engine's own run of `ask.checks` (runners/command.py): no model, no prompt, no
    budget; read-only on the task's workspace like every deliberation run; its wall-clock limit
    is the checks' own times plus a margin, so each check's timeout fires first."""
    spec = build_spec(
        step.task,
        turn,
        step.policy,
        prompt=ask.prompt,
        system_prompt="",
        resume=None,
        output_schema=None,
        budget_left_usd=None,
        read_only=True,
    )
    request = spec.request.model_copy(update={"checks": ask.checks, "model": None})
    hard = sum(c.timeout_s for c in ask.checks) + CHECKS_MARGIN_S
    return spec.model_copy(update={"agent": "command", "request": request, "hard_timeout_s": hard})


async def _conclude(
    step: Step, turn: Turn, change: Change, c: Conclusion, table: StateTable
) -> None:
    record_path = await _write_record(step, c)
    for i, (path, content) in enumerate(c.files.items()):
        saved = await _write_file(step.policy.workspace, path, content)
        change.outbox.append(post(step.room, turn, saved, key=f"file:{i}", persona="tribunal"))
    if c.files:
        # What a protocol saves is committed on the task's branch by the engine, like approved
        # work (rooms/work/worktrees.py); "" when the workspace is used in place.
        why = f"Written by the {step.task.protocol} as its conclusion"
        work = await snapshots.commit_as_is(step.policy, step.task, why)
        if work:
            change.outbox.append(post(step.room, turn, work, key="commit", persona="tribunal"))
    if record_path:
        change.outbox.append(
            post(
                step.room,
                turn,
                f"📄 Decision record: {record_path}",
                key="record",
                persona="tribunal",
            )
        )
    if c.needs_people:
        change.event = PEOPLE
        change.escalation = ask_people(
            step.task,
            step.room,
            step.policy,
            table=table,
            kind=step.task.protocol,
            question=c.question,
            reason=c.summary.splitlines()[0],
            options=c.options,
        )
    else:
        change.event = DONE


async def _write_record(step: Step, c: Conclusion) -> str | None:
    if step.data_dir is None:
        return None
    path = os.path.join(step.data_dir, "decisions", f"task-{step.task.id}-{step.task.protocol}.md")
    try:
        await files.save(path, c.record)
    except OSError as exc:
        log.warning("task %s: the decision record could not be written: %s", step.task.id, exc)
        return None
    return path


async def _write_file(workspace: str | None, rel: str, content: str) -> str:
    """Save `content` at `rel` in the workspace, never over an earlier file (a second arena on
    the same topic the same day gets `-2`); what to tell the room."""
    if workspace is None:
        return f"No workspace is set for this group, so {rel} was not saved there."
    root = os.path.realpath(workspace)
    stem, ext = os.path.splitext(rel)
    for n in range(1, 100):
        candidate = rel if n == 1 else f"{stem}-{n}{ext}"
        full = os.path.realpath(os.path.join(root, candidate))
        if not full.startswith(root + os.sep):  # the slug rules make this unreachable
            return f"{rel} was not saved: it would be outside the workspace."
        try:
            await files.save(full, content, exclusive=True)
        except FileExistsError:
            continue
        except OSError as exc:
            return f"{candidate} could not be saved in the workspace: {exc.strerror or exc}."
        return f"📄 Saved in the workspace: {candidate}"
    return f"{rel} was not saved: too many files of that name."


def _heard(step: Step) -> str:
    """What the people wrote in the room during the run: every actor reads it (the last few
    messages, each on one line and cut, so a message cannot pose as a section of the prompt)."""
    said = [m for m in step.history.messages if m.kind == "message"][-_HEARD:]
    if not said:
        return ""
    lines = [f"- {m.user}: {' '.join(m.text.split())[:_HEARD_CHARS]}" for m in said]
    return "\n\n## From the people in the room\n\n" + "\n".join(lines)


def _post(step: Step, turn: Turn, p: Post, i: int) -> OutboxDraft:
    return post(step.room, turn, p.text, key=f"post:{i}", persona=p.persona)


def all_answered(asks: list[Ask], replies: list[Reply]) -> bool:
    """Whether every run a phase asked for has answered (its replies can advance it)."""
    got = {r.key for r in replies}
    return bool(asks) and all(a.key in got for a in asks)


def reply_of(turn: Turn) -> Reply:
    if turn.status == "failed":
        return Reply(turn.role, output=turn.output, error=turn.error or "the run failed")
    return Reply(turn.role, output=turn.output, structured=turn.structured)


def reply_of_run(key: str, run: RunOutcome) -> Reply:
    if run.failed:
        _, error = run.failure()  # the text the store keeps on the turn, so a replay reads the same
        return Reply(
            key,
            output=run.output,
            error=error,
            tokens=run.usage.tokens,
            cost_usd=run.usage.cost_usd,
        )
    return Reply(
        key,
        output=run.output,
        structured=run.structured,
        tokens=run.usage.tokens,
        cost_usd=run.usage.cost_usd,
    )
