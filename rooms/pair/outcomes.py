"""A runner failure in the pair (DESIGN §3): a failed run is recorded with its code and reason
and posted. The same role is retried once; a second consecutive failure asks the humans, naming
the failure, rather than stopping silently.
A turn the credential proxy stopped for the budget asks them at once, as a ceiling does; so
does a turn that could not start because the deployment is wrong (`setup`: e.g. no model
credential), which a retry would only fail the same way.
"""

from __future__ import annotations

from rooms.base.model import Turn
from rooms.base.records import Change
from rooms.base.words import CEILING
from rooms.core.escalations import ask
from rooms.core.outputs import post, turn_end
from rooms.core.protocol import Step
from rooms.core.turns import RunOutcome
from rooms.pair.states import FAILED, FINALIZE, TABLE
from runners.protocol import BUDGET, SETUP


def failure_change(step: Step, turn: Turn, run: RunOutcome) -> Change:
    task, room, policy, now, owner = step.task, step.room, step.policy, step.now, step.owner
    code, error = run.failure()
    what = f"{turn.role} turn {turn.seq} failed ({code}): {error}"
    change = Change(
        task.id,
        now,
        expect_version=task.version,
        expect_lease=owner,
        turn=turn_end(turn, run, now),
    )
    if code == BUDGET:
        # The credential proxy refused a request: the task's budget is spent. That is a ceiling
        # (an approver may grant another budget), not a failure to retry.
        change.event = FAILED if task.status == FINALIZE else CEILING
        change.escalation = ask(
            task,
            room,
            policy,
            table=TABLE,
            kind=CEILING,
            question="the task's budget is spent. Continue with another budget of the same size?",
            reason=what,
        )
        change.outbox.append(post(room, turn, f"⚠️ The {what}.", key="failed", persona="tribunal"))
    elif task.failures >= 1 or code == SETUP:
        change.event = FAILED
        change.escalation = ask(
            task,
            room,
            policy,
            table=TABLE,
            kind="failure",
            question=(
                f"the {turn.role}'s run cannot start until the bot's set-up is fixed. Retry "
                "(once it is) or close?"
                if code == SETUP
                else f"the {turn.role}'s run failed twice in a row. Retry or close?"
            ),
            reason=what,
        )
        change.outbox.append(post(room, turn, f"⚠️ The {what}.", key="failed", persona="tribunal"))
    else:
        change.failures = "inc"
        change.outbox.append(
            post(room, turn, f"⚠️ The {what}. Retrying once.", key="failed", persona="tribunal")
        )
    return change
