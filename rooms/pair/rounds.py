"""What an owner or reviewer turn leads to (DESIGN §3, §4), and the owner's wrap-up turn.

After a work turn: read the marker (none: owner DONE, reviewer CHANGES_REQUESTED, stored as
unmarked), hash the workspace, run the detectors on the whole history, then decide, in order:
an approval goes to finalize (even at a ceiling: one wrap-up turn is left);
a ceiling asks the humans; BLOCKED/NEEDS_CONTEXT or a detector
firing goes to arbitration, unless the engine's caps say to ask the humans instead (the
arbitrations allowed are used up, or the same stagnation or BLOCKED reason came back after a
PROCEED); otherwise the marker moves the task on.

After the wrap-up: the work goes back to review when the workspace hash or the git tree
differs from what the reviewer approved (rooms/pair/approval.py); otherwise the approved tree
is committed and the task closes.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import replace
from functools import partial

from rooms.base.model import Firing, GroupPolicy, RoomRef, Task, Thresholds, Turn
from rooms.base.records import Change, EscalationDraft, FiringDraft
from rooms.base.words import (
    APPROVED,
    BLOCKED_DETECTOR,
    CEILING,
    CHANGES_REQUESTED,
    DONE,
    OWNER,
    PROCEED,
    REVIEWER,
    STUCK,
    TRIBUNAL,
    UNMARKED,
)
from rooms.core.escalations import ask
from rooms.core.outputs import post, turn_end
from rooms.core.protocol import Step
from rooms.core.turns import RunOutcome
from rooms.judge.detectors import check, detector, remembers_proceed
from rooms.judge.finding_ledger import findings_summary, ledger_of
from rooms.judge.history import History
from rooms.judge.turn_objects import ReviewerTurn, read_turn
from rooms.pair.approval import recheck, record_approval
from rooms.pair.progress_judge import judge_progress
from rooms.pair.states import CHANGED, DEADLOCK, TABLE, WRAPPED_UP
from rooms.pair.summons import summon_change
from rooms.pair.wrapups import escalation_after_changed_wrapup
from rooms.work.workspace import tree_hash
from rooms.work.worktrees import commit_note

# The detectors run on the event loop when the steps they read are this short (tens of µs, less
# than a thread hand-off and the loop's wake-up after it); longer ones on a thread (up to
# TEXT_LIMIT a step they take milliseconds, and the loop would stall for every other task).
INLINE_CHECK_CHARS = 32 * 1024


async def after_work_turn(step: Step, turn: Turn, run: RunOutcome) -> Change:
    task, room, policy, history = step.task, step.room, step.policy, step.history
    thresholds, now, owner = step.limits, step.now, step.owner
    role = turn.role
    # The turn's object when it gave a valid one, else its marker line (rooms/judge/turn_objects).
    reading = read_turn(OWNER if role == OWNER else REVIEWER, run.output, run.structured)
    tree = await tree_hash(policy.workspace)
    stored = reading.turn.model_dump() if reading.turn is not None else run.structured
    # A structured turn's text is its prose: what the thread reads, the others are quoted and
    # the detectors compare (the object itself is stored beside it).
    text = reading.prose if reading.prose is not None else run.output
    shown = text
    if isinstance(reading.turn, ReviewerTurn):
        # The engine owns finding ids (rooms/judge/finding_ledger.py): new ones get its next
        # numbers before the review is stored; the thread sees the prose and the findings.
        before = ledger_of(history.pair_done)
        review = before.numbered(reading.turn)
        stored = review.model_dump()
        summary = findings_summary(before, before.after(review))
        shown = f"{text}\n\n{summary}" if summary else text
    found = reading.marker
    marker = found or UNMARKED[role]
    end = turn_end(
        turn, run, now, marker=marker, unmarked=found is None, tree=tree,
        source=reading.source, doubt=reading.doubt, structured=stored, output=text,
    )  # fmt: skip
    done = turn.model_copy(
        update={
            "status": "done",
            "output": text,
            "marker": marker,
            "tree": tree,
            "structured": stored,
            "marker_source": reading.source,
            "marker_doubt": reading.doubt,
        }
    )
    steps = history.with_turn(done).steps()
    detect = partial(
        check,
        steps,
        thresholds,
        turns=len(history.turns),
        tokens=task.tokens + run.usage.tokens,
        cost_usd=task.cost_usd + run.usage.cost_usd,
        started_at=task.created_at + history.waited_s,  # people's time is not the pair's
        now=now,
        proceeded=_proceeded_stagnation(history),
    )
    if sum(len(s.text) for s in steps) <= INLINE_CHECK_CHARS:
        firing = detect()  # ~50 µs: less than handing it to a thread and back
    else:  # off the event loop: other tasks' turns and lease renewals go on meanwhile
        firing = await asyncio.to_thread(detect)
    judged = None
    if firing is None and role == REVIEWER and marker not in STUCK:
        # Nothing in the words or the workspace fired: a cheap judge reads for meaning.
        judged = await judge_progress(step, steps, done)
        if judged is not None and judged.extra.get("fires"):
            firing = judged
    change = Change(
        task.id,
        now,
        expect_version=task.version,
        expect_lease=owner,
        turn=end,
        failures="reset",
        rounds="inc" if role == REVIEWER else None,
        outbox=[post(room, turn, _labelled(turn, shown, found))],
    )
    if marker == APPROVED:
        # Approved work goes to its one wrap-up turn even at a ceiling: asking the humans now
        # would send it back to the owner (waiting_human leads to owner_turn).
        change.event = APPROVED
    elif firing is not None and firing.detector == CEILING:
        change.event = CEILING
        change.escalation = ask(
            task,
            room,
            policy,
            table=TABLE,
            kind=CEILING,
            question="the task reached a ceiling. Continue with another budget of the same size?",
            reason=firing.reason,
        )
    elif marker in STUCK or firing is not None:
        firing = firing or _stuck_firing(role, marker, text)
        instead = _escalation_instead(task, room, policy, history, firing, thresholds)
        change.event = CEILING if instead else (marker if marker in STUCK else DEADLOCK)
        change.escalation = instead
        then = "asking the people here" if instead else "calling the arbiter"
        note = f"🔎 Deadlock detector `{firing.detector}`: {firing.reason} → {then}."
        change.outbox.append(post(room, turn, note, key="firing", persona=TRIBUNAL))
    else:
        change.event = marker
    if firing is not None:
        # Stored even when it does not act (an approval wins), so thresholds can be tuned.
        acted = change.event not in (APPROVED, DONE, CHANGES_REQUESTED)
        change.firing = FiringDraft(firing, turn.id, acted=acted)
    elif judged is not None:  # a judgment that does not fire is kept, with its cost
        change.firing = FiringDraft(judged, turn.id, acted=False)
    if judged is not None and change.firing is not None:
        # The judge's call counts toward the task's budgets, as a reference fan-out's does.
        change.firing = replace(
            change.firing,
            tokens=int(judged.extra.get("tokens", 0)),
            cost_usd=float(judged.extra.get("cost_usd", 0.0)),
        )
    if marker == APPROVED:
        # The approved git tree is recorded with the task, or the people are asked when the
        # work cannot be committed as it is (rooms/pair/approval.py).
        await record_approval(step, turn, change)
    return change


async def after_finalize(step: Step, turn: Turn, run: RunOutcome) -> Change:
    task, room, policy, now, owner = step.task, step.room, step.policy, step.now, step.owner
    # A whole pass, not the kernel's events alone (rooms/work/watched_tree.py): this hash
    # decides whether the approved work went out unchanged.
    tree = await tree_hash(policy.workspace, verify=True)
    # The workspace the reviewer approved (its hash), and the git tree that is committed.
    check = await recheck(step)
    changed = tree != turn.tree_before or check.changed
    reading = read_turn(OWNER, run.output, run.structured)
    found = reading.marker
    text = reading.prose if reading.prose is not None else run.output
    end = turn_end(
        turn, run, now, marker=found, unmarked=found is None, tree=tree, source=reading.source,
        output=text,
    )  # fmt: skip
    change = Change(
        task.id,
        now,
        expect_version=task.version,
        expect_lease=owner,
        turn=end,
        failures="reset",
        event=CHANGED if changed else WRAPPED_UP,
        outbox=[post(room, turn, text)],
    )
    if changed:
        why = f" ({check.why})" if check.why else ""
        note = f"The owner changed the work while wrapping up{why}; the reviewer checks it again."
        change.escalation = escalation_after_changed_wrapup(
            task, turn, room, policy, step.history, step.limits,
            tokens=task.tokens + run.usage.tokens, cost_usd=task.cost_usd + run.usage.cost_usd,
            now=now,
        )  # fmt: skip
        if change.escalation is not None:
            change.event = CEILING
            note = "The owner changed the work while wrapping up again; asking the people here."
    elif task.summon is not None:
        # A person called the arbiter while the owner wrapped up: it rules before anything
        # closes (a PROCEED sends the work back to the reviewer).
        called = summon_change(step)
        called.turn, called.failures = change.turn, change.failures
        called.outbox = [*change.outbox, *called.outbox]
        return called
    else:
        # The engine commits the approved tree on the task's branch (rooms/work/worktrees.py).
        work = await commit_note(policy, task, check.tree) if check.tree else ""
        note = f"✅ Task #{task.id} is done and closed." + (f" {work}" if work else "")
    change.outbox.append(post(room, turn, note, key="closing", persona=TRIBUNAL))
    return change


def _proceeded_stagnation(history: History) -> set[str]:
    """Fingerprints of the firings the arbiter ruled PROCEED on, of the detectors that
    remember them (a stagnation)."""
    found: set[str] = set()
    for v in history.verdicts:
        earlier = history.firing(v.firing_id)
        if (
            v.ruling.verdict == PROCEED
            and earlier is not None
            and remembers_proceed(earlier.firing.detector)
            and earlier.firing.fingerprint
        ):
            found.add(earlier.firing.fingerprint)
    return found


def _labelled(turn: Turn, output: str, found: str | None) -> str:
    if found is None:
        return f"{output}\n\n(no marker line: counted as {UNMARKED[turn.role]})"
    return output


def _stuck_firing(role: str, marker: str, output: str) -> Firing:
    """BLOCKED/NEEDS_CONTEXT when no detector put it into words (e.g. a person had just
    written, which starts the detectors' windows afresh)."""
    head = " ".join(output.split())[:300]
    digest = hashlib.sha256(f"{marker}\n{head}".encode()).hexdigest()
    return Firing(
        detector=BLOCKED_DETECTOR,
        reason=f"the {role} reported {marker}",
        fingerprint=digest,
        extra={"role": role, "marker": marker},
    )


def _escalation_instead(
    task: Task,
    room: RoomRef,
    policy: GroupPolicy,
    history: History,
    firing: Firing,
    t: Thresholds,
) -> EscalationDraft | None:
    """The engine's caps (DESIGN §4): when arbitrating again would not help, ask the humans."""
    spec = detector(firing.detector)
    # A detector whose fingerprint says "the same problem again" after a PROCEED.
    if spec is not None and spec.repeat_asks_people and firing.fingerprint:
        for v in history.verdicts:
            earlier = history.firing(v.firing_id)
            if (
                v.ruling.verdict == PROCEED
                and earlier is not None
                and earlier.firing.detector == firing.detector
                and earlier.firing.fingerprint == firing.fingerprint
            ):
                return ask(
                    task,
                    room,
                    policy,
                    table=TABLE,
                    kind="repeat",
                    question=(
                        f"the arbiter ruled PROCEED on this before (turn {v.turn_seq}), and the "
                        f"same {firing.detector} came back. How should the owner go on?"
                    ),
                    reason=firing.reason,
                )
    if task.arbitrations >= t.max_arbitrations:
        return ask(
            task,
            room,
            policy,
            table=TABLE,
            kind="arbitration_cap",
            question=(
                f"the pair is stuck again and the {t.max_arbitrations} arbitrations allowed "
                "for this task are used. How should the owner go on?"
            ),
            reason=firing.reason,
        )
    return None
