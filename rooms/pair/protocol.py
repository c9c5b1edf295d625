"""The owner/reviewer pair as a protocol (DESIGN §3, §9): the first one the driver runs.

Who acts is the state table's (rooms.pair.states); how a turn starts and what it is asked are
here; what an outcome changes is in rounds (owner and reviewer turns, the wrap-up), arbitration
(the arbiter's ruling) and outcomes (a failed run).
"""

from __future__ import annotations

from prompts import load_prompt
from rooms.base.machine import StateTable
from rooms.base.model import GroupPolicy, Turn
from rooms.base.records import Change
from rooms.base.words import APPROVED, ARBITER, OWNER, REVIEWER, ROLES
from rooms.core.protocol import Step, TurnStart, decided
from rooms.core.registry import ProtocolSpec
from rooms.core.turns import RunOutcome, build_spec
from rooms.judge.history import History
from rooms.judge.turn_objects import schema_for
from rooms.judge.verdicts import RULING_SCHEMA
from rooms.pair import resolving, states
from rooms.pair.arbiter_prompt import arbiter_prompt
from rooms.pair.arbitration import after_arbiter_turn
from rooms.pair.outcomes import failure_change
from rooms.pair.prompting import build_prompt
from rooms.pair.rounds import after_finalize, after_work_turn
from rooms.pair.sessions import resume_for, resumed_since
from rooms.pair.summons import summon_change
from rooms.work.workspace import tree_hash
from runners.protocol import RunSpec


class PairProtocol:
    name = states.PROTOCOL
    # Every turn's output is posted on its own, so a finished turn's progress message goes
    # (rooms/core/progress.py: one message per turn).
    posts_each_turn = True
    table: StateTable = states.TABLE
    command: str | None = None  # the default kind of task: any mention that is not a command

    def opened_text(self, user: str, policy: GroupPolicy) -> str:
        return (
            f"📋 Task opened by {user}. The owner starts working; "
            f"{policy.how_to('`status`')} to see where it is or `stop` to stop it."
        )

    def label(self, status: str) -> str:
        return states.LABELS.get(status, status)

    async def begin(self, step: Step) -> TurnStart:
        if step.task.status == states.RESOLVING:
            return resolving.begin(step)
        role = self.table.actor(step.task.status)
        assert role is not None  # the driver begins turns only where someone acts
        tree_before = (
            await _approved_tree(step.history, step.policy)
            if step.task.status == states.FINALIZE
            else None
        )
        policy = step.policy
        resume = resume_for(step.history, role, policy.session_turns, policy.session_chars)
        return TurnStart(role, resume, tree_before)

    async def spec(self, step: Step, turn: Turn) -> RunSpec:
        task, policy, history = step.task, step.policy, step.history
        if task.status == states.RESOLVING:
            return resolving.spec(step, turn)
        cause = history.last_acted_firing()
        reason = cause.firing.reason if cause else ""
        if turn.role == ARBITER:  # fair input and reference opinions
            prompt = await arbiter_prompt(step, turn.id, reason)
        else:
            since = resumed_since(history, turn.role, turn.resumed_from)
            prompt = build_prompt(
                task, task.status, turn.role, history, policy, reason=reason, since=since
            )
        budget_left = max(step.limits.max_cost_usd - task.cost_usd, 0.01)
        # The credential proxy refuses requests past the tokens left; the wrap-up of approved work
        # runs even at a ceiling (rooms/pair/rounds.py), so it gets no token ceiling.
        tokens_left = (
            None if task.status == states.FINALIZE else max(step.limits.max_tokens - task.tokens, 0)
        )
        return build_spec(
            task,
            turn,
            policy,
            prompt=prompt,
            system_prompt=load_prompt(turn.role, policy.prompt_overrides),
            resume=turn.resumed_from,
            # Every turn answers with its role's object (rooms/judge/turn_objects.py); the
            # text is read only when it gives none that is valid.
            output_schema=RULING_SCHEMA if turn.role == ARBITER else schema_for(turn.role),
            budget_left_usd=budget_left,
            read_only=turn.role != OWNER,
            tokens_left=tokens_left,
        )

    async def decide(self, step: Step, turn: Turn, run: RunOutcome) -> Change:
        if step.task.status == states.RESOLVING:  # the resolve retries its own failed runs
            change = resolving.decide(step, turn, run)
        elif run.failed:
            change = failure_change(step, turn, run)
        elif step.task.status == states.ARBITRATION:
            change = await after_arbiter_turn(step, turn, run)
        elif step.task.status == states.FINALIZE:
            change = await after_finalize(step, turn, run)
        else:
            change = await after_work_turn(step, turn, run)
        return decided(self.table, step.task, change)

    def decides_once(self, step: Step, turn: Turn) -> bool:
        """The wrap-up's decision commits the approved tree on the task's branch (outside its
        `Change`): the driver makes it once, on what people did while the turn ran."""
        return step.task.status == states.FINALIZE

    async def summon(self, step: Step) -> Change:
        """A person's `arbitrate` (rooms.core.summons), taken before the next turn."""
        return summon_change(step)


async def _approved_tree(history: History, policy: GroupPolicy) -> str | None:
    """The workspace the reviewer approved: the wrap-up is compared with it, not with the
    workspace at the start of this attempt, so edits by a failed or interrupted wrap-up attempt
    still send the work back to review."""
    for turn in reversed(history.done):
        if turn.role == REVIEWER and turn.marker == APPROVED:
            if turn.tree is not None:
                return turn.tree
            break
    return await tree_hash(policy.workspace)


PAIR = PairProtocol()
# How the rest of Tribunal sees it (rooms.core.registry): the default kind of task, opened by any
# text that is no command word; its three roles' prompts are the ones a group may replace first.
SPEC = ProtocolSpec(PAIR, prompt_roles=ROLES)
