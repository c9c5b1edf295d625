"""What an arbiter's turn leads to (DESIGN §5).

The ruling is parsed (structured output first, the text as fallback; unreadable escalates, it
never proceeds), checked (an incomplete one goes back to a fresh arbiter turn once, naming what
it lacks; a second escalates: rooms.judge.sendback), stored with its reasons and the firing that
led to it, written as a Markdown decision record under `data_dir`, posted, and applied:
PROCEED → the reviewer re-checks; REVISE → the owner, with the conditions at the top of its next
prompt; RESET → the owner, on a fresh session, with the new direction; ESCALATE → the humans. A
ruling resets the round count.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace

from rooms.base.model import GroupPolicy, Ruling, Task, Turn
from rooms.base.records import Change, FiringDraft, VerdictDraft
from rooms.base.words import ARBITER, ESCALATE, OWNER, REVIEWER, SUMMONED
from rooms.core.cards import ruling_card
from rooms.core.escalations import ask
from rooms.core.outputs import post, turn_end
from rooms.core.protocol import Step
from rooms.core.summons import firing as summon_firing
from rooms.core.turns import RunOutcome
from rooms.judge.history import History
from rooms.judge.positions import FIRST_READING
from rooms.judge.sendback import check_answer, earlier_send_back, send_back_note
from rooms.judge.verdicts import decision_record, parse_ruling
from rooms.pair import resolving
from rooms.pair.ruling_checks import Review, review
from rooms.pair.states import SENT_BACK, TABLE
from rooms.work import files

log = logging.getLogger(__name__)


async def after_arbiter_turn(step: Step, turn: Turn, run: RunOutcome) -> Change:
    task, room, policy, history = step.task, step.room, step.policy, step.history
    now, owner, data_dir = step.now, step.owner, step.data_dir
    parsed = parse_ruling(run.output, run.structured)
    # A request for tests comes before the ruling's own checks: its verdict is provisional,
    # not applied, so what it lacks does not matter yet.
    not_taken = resolving.wanted(step, parsed)
    if not_taken == "":
        return resolving.ask_for_tests(step, turn, run, parsed)
    earlier = earlier_send_back(history.turns, turn.seq)
    checked = check_answer(parsed, run.output, sent_back_before=earlier)
    if checked.ruling is None:
        assert checked.problem is not None
        return _send_back(step, turn, run, parsed, checked.problem)
    ruling = checked.ruling
    cause = history.last_acted_firing()
    reason = cause.firing.reason if cause else "(no detector reason recorded)"
    if earlier is not None:
        reason += f"\n\nA first ruling was sent back ({earlier})."
    # Reference opinions and the swap check (rooms/pair/ruling_checks.py) may ask the arbiter again.
    reviewed = await review(step, turn, ruling, cause.firing.reason if cause else "")
    if reviewed.ruling is None:
        return _not_yet(step, turn, run, ruling, reviewed)
    ruling = reviewed.ruling
    extra = [*resolving.record_lines(history, resolving.resolve_limits(policy)), *reviewed.record]
    record_path, record_error = await _write_record(
        task, turn, ruling, reason, history, policy, data_dir, extra
    )
    text = "\n".join([render(ruling, record_path, record_error), *reviewed.room])
    if not_taken:
        text += f"\n(It also asked for tests; not taken: {not_taken}.)"
    card = ruling_card(ruling, record_path)
    card = replace(card, sections=card.sections + tuple(reviewed.card))
    change = Change(
        task.id,
        now,
        expect_version=task.version,
        expect_lease=owner,
        turn=turn_end(turn, run, now, marker=ruling.verdict if ruling.readable else None),
        verdict=VerdictDraft(
            turn.id, ruling, record_path, cause.id if cause else None, **reviewed.verdict_fields
        ),
        event=ruling.verdict,
        rounds="reset",
        count_arbitration=True,
        failures="reset",
        outbox=[replace(post(room, turn, text), card=card)],
    )
    if task.summon is not None and (cause is None or cause.firing.detector != SUMMONED):
        # A person called the arbiter while a detector's arbitration was on its way: this
        # ruling answers both; who asked is stored with it (the detector's firing led here).
        change.firing = FiringDraft(summon_firing(task.summon), turn.id, acted=False)
    if ruling.verdict == ESCALATE:
        change.escalation = ask(
            task,
            room,
            policy,
            table=TABLE,
            kind="ruling",
            question=ruling.question or "the arbiter asks the people here to decide.",
            reason=ruling.reasons or reason,
            options=tuple(ruling.options),
            # The ruling's reasons are in its post just above: not a second time.
            show_reason=not ruling.reasons,
        )
    return change


def _send_back(step: Step, turn: Turn, run: RunOutcome, ruling: Ruling, problem: str) -> Change:
    """Not applied, not counted: the turn is kept with what it lacked, and a fresh arbiter turn
    is asked again (its prompt names the problem)."""
    now = step.now
    end = replace(turn_end(turn, run, now, marker=ruling.verdict), error=send_back_note(problem))
    note = f"⚖️ The arbiter's {ruling.verdict} cannot be applied: {problem}. Asking it once more."
    return Change(
        step.task.id,
        now,
        expect_version=step.task.version,
        expect_lease=step.owner,
        turn=end,
        event=SENT_BACK,
        failures="reset",
        # Only the note is posted: the incomplete ruling is not one to act on (it is stored).
        outbox=[post(step.room, turn, note, key="sent_back", persona="tribunal")],
    )


def _not_yet(step: Step, turn: Turn, run: RunOutcome, ruling: Ruling, reviewed: Review) -> Change:
    """A ruling that misuses the reference opinions goes back once (as an incomplete one does);
    a swap check's first reading is kept and the arbiter reads the positions swapped."""
    if reviewed.problem is not None:
        return _send_back(step, turn, run, ruling, reviewed.problem)
    now = step.now
    end = replace(turn_end(turn, run, now, marker=ruling.verdict), error=FIRST_READING)
    note = (
        f"⚖️ First reading: {ruling.verdict}. The swap check asks again with the two positions "
        "swapped; the ruling stands only if both readings agree."
    )
    return Change(
        step.task.id,
        now,
        expect_version=step.task.version,
        expect_lease=step.owner,
        turn=end,
        event=SENT_BACK,
        failures="reset",
        outbox=[post(step.room, turn, note, key="first_reading", persona="tribunal")],
    )


def render(ruling: Ruling, record_path: str | None, record_error: str | None) -> str:
    if not ruling.readable:
        lines = ["⚖️ The arbiter's ruling could not be read, so the people here decide."]
    else:
        lines = [f"⚖️ Ruling: {ruling.verdict}"]
    if ruling.reasons:
        lines.append(ruling.reasons)
    if ruling.conditions:
        lines.append("Conditions:")
        lines += [f"- {c}" for c in ruling.conditions]
    if ruling.new_direction:
        lines.append(f"New direction: {ruling.new_direction}")
    if ruling.dissent:
        lines.append(f"Dissent: {ruling.dissent}")
    if record_path:
        lines.append(f"Decision record: {record_path}")
    elif record_error:
        lines.append(f"(The decision record could not be written: {record_error})")
    return "\n".join(lines)


async def _write_record(
    task: Task,
    turn: Turn,
    ruling: Ruling,
    reason: str,
    history: History,
    policy: GroupPolicy,
    data_dir: str | None,
    extra: list[str],
) -> tuple[str | None, str | None]:
    if data_dir is None:
        return None, None
    quoted = [
        f"{t.role} (turn {t.seq}): {t.output}"
        for t in history.pair_done[-policy.recent_turns :]
        if policy.recent_turns > 0
    ]
    models = {
        role: f"{cfg.agent}:{cfg.model or 'default'}"
        for role, cfg in (
            (OWNER, policy.owner),
            (REVIEWER, policy.reviewer),
            (ARBITER, policy.arbiter),
        )
    }
    text = decision_record(
        ruling, task_text=task.text, reason=reason, turns_quoted=quoted, models=models, extra=extra
    )
    # Named by task and turn, so writing it again after a crash replaces the same file.
    path = os.path.join(data_dir, "decisions", f"task-{task.id}-turn-{turn.seq}.md")
    try:
        await files.save(path, text)
    except OSError as exc:
        log.warning("decision record %s not written: %s", path, exc)
        return None, f"{exc.strerror or exc}"
    return path, None
