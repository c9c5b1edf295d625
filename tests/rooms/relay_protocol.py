"""A protocol that exists only in the tests: two scripted actors, `left` and `right`, take turns
until one of them answers STOP. It is built from the public protocol interface alone
(rooms.core.protocol, rooms.base.machine, rooms.core.outputs, rooms.core.turns), so driving it
through the real engine shows that a new kind of task needs no change to the driver or the store.
"""

from __future__ import annotations

from rooms.base.machine import StateTable
from rooms.base.model import GroupPolicy, Turn
from rooms.base.records import Change
from rooms.base.words import ANSWER, APPROVE, CLOSED, REJECT, STOP, WAITING_HUMAN
from rooms.core.outputs import post, turn_end
from rooms.core.protocol import Step, TurnStart, decided
from rooms.core.turns import RunOutcome, build_spec
from runners.protocol import RunSpec

LEFT_TURN, RIGHT_TURN = "left_turn", "right_turn"
PASS, DONE, FAILED = "pass", "done", "failed"

TABLE = StateTable(
    protocol="relay",
    initial=LEFT_TURN,
    transitions={
        LEFT_TURN: {PASS: RIGHT_TURN, DONE: CLOSED, FAILED: WAITING_HUMAN, STOP: CLOSED},
        RIGHT_TURN: {PASS: LEFT_TURN, DONE: CLOSED, FAILED: WAITING_HUMAN, STOP: CLOSED},
        WAITING_HUMAN: {ANSWER: LEFT_TURN, APPROVE: LEFT_TURN, REJECT: CLOSED, STOP: CLOSED},
        CLOSED: {},
    },
    actors={LEFT_TURN: "left", RIGHT_TURN: "right", WAITING_HUMAN: None, CLOSED: None},
)


class RelayProtocol:
    name = "relay"
    table = TABLE
    command: str | None = "relay"

    def opened_text(self, user: str, policy: GroupPolicy) -> str:
        return f"🔁 Relay opened by {user}: left and right take turns until one says STOP."

    def label(self, status: str) -> str:
        return {LEFT_TURN: "left's turn", RIGHT_TURN: "right's turn"}.get(status, status)

    async def begin(self, step: Step) -> TurnStart:
        role = self.table.actor(step.task.status)
        assert role is not None
        return TurnStart(role)

    async def spec(self, step: Step, turn: Turn) -> RunSpec:
        said = [f"{t.role}: {t.output}" for t in step.history.done]
        heard = [f"{m.user}: {m.text}" for m in step.history.messages]
        prompt = "\n".join([f"relay task: {step.task.text}", *said, *heard, f"you are {turn.role}"])
        return build_spec(
            step.task,
            turn,
            step.policy,
            prompt=prompt,
            system_prompt="take your turn; answer STOP to end",
            resume=None,
            output_schema=None,
            budget_left_usd=None,
            read_only=True,
        )

    async def decide(self, step: Step, turn: Turn, run: RunOutcome) -> Change:
        change = Change(
            step.task.id,
            step.now,
            expect_version=step.task.version,
            expect_lease=step.owner,
            turn=turn_end(turn, run, step.now),
        )
        if run.failed:
            change.event = FAILED
            change.outbox.append(post(step.room, turn, "the relay broke", key="failed"))
        else:
            stop = run.output.strip().upper().startswith("STOP")
            change.event = DONE if stop else PASS
            change.outbox.append(post(step.room, turn, run.output))
        return decided(self.table, step.task, change)


RELAY = RelayProtocol()
