"""Decision records on disk (DESIGN §2): written with the ruling, completed when its cycle ends.

A ruling's cycle runs from its arbiter turn to the next ruling or the task's close. Its record
(Markdown under `<data_dir>/decisions/`, rooms.judge.verdicts.decision_record) ends with an
Outcome section that is rewritten from the store after every event that moves the cycle on: each
question the people were asked in it and its answer (who, what, when), the turns that followed,
how the cycle ended, and the ruling's line in the outcome ledger (borne out or not, upheld or
overridden: rooms/judge/outcomes.py), which is written to the store first. It is derived,
never edited by hand, so writing it again after a crash gives the same file; a record that
cannot be written is logged and changes nothing else.
"""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import UTC, datetime

from rooms.base.model import Task, Turn
from rooms.base.records import Escalation, VerdictRow
from rooms.core.context import Ctx
from rooms.core.ledger import outcome_line
from rooms.judge.outcomes import Outcome
from rooms.judge.verdicts import OUTCOME_MARK, blockquote
from rooms.work import files

log = logging.getLogger(__name__)
_TURNS_LISTED = 20  # turns of one cycle listed in its outcome; the rest are counted


def when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def outcome_section(
    verdict: VerdictRow,
    following: VerdictRow | None,
    task: Task,
    turns: list[Turn],
    escalations: list[Escalation],
    outcome: Outcome | None = None,
) -> str:
    """The Outcome section of `verdict`'s record; `following`: the next ruling, if any;
    `outcome`: its ledger row."""
    end_seq = following.turn_seq if following else None
    end_at = following.at if following else None
    after = [
        t
        for t in turns
        if t.seq > verdict.turn_seq
        and (end_seq is None or t.seq < end_seq)
        and t.status != "running"
    ]
    asked = [
        e
        for e in escalations
        if e.created_at >= verdict.at and (end_at is None or e.created_at < end_at)
    ]
    out = ["## Outcome", ""]
    for e in asked:
        question = _one_line(e.question)
        out += [f"Asked the people (escalation #{e.id}, {when(e.created_at)}): {question}", ""]
        if e.status == "answered" and e.answered_by:
            at = when(e.answered_at) if e.answered_at is not None else "(time not recorded)"
            who = _one_line(e.answered_by)
            out += [f"Answered by **{who}** at {at}:", "", blockquote(e.answer or ""), ""]
        elif e.status == "closed":
            out += ["No answer: the question closed when the task moved on.", ""]
        else:
            out += ["Waiting for an answer.", ""]
    if after:
        out += ["How the task went on:", ""]
        out += [f"- turn {t.seq}, {t.role}: {_what(t)}" for t in after[:_TURNS_LISTED]]
        if len(after) > _TURNS_LISTED:
            out.append(f"- … and {len(after) - _TURNS_LISTED} more turns")
        out.append("")
    out.append(_ending(following, task, asked))
    if outcome is not None:
        out += ["", f"Ledger: {outcome_line(outcome)}."]
    return "\n".join(out).rstrip() + "\n"


def _one_line(text: str) -> str:
    """Agent or person text outside a quote: one line, so it cannot start a line of its own."""
    return " ".join(text.split())


def _what(turn: Turn) -> str:
    if turn.status == "done":
        # A reading in doubt says why it is not the turn's own marker (turn_objects.py).
        doubt = f" (in doubt: {turn.marker_doubt})" if turn.marker_doubt else ""
        return (turn.marker or "done") + doubt
    return f"{turn.status} ({_one_line(turn.error)})" if turn.error else turn.status


def _ending(following: VerdictRow | None, task: Task, asked: list[Escalation]) -> str:
    if following is not None:
        return (
            f"The cycle ended with the next ruling: {following.ruling.verdict} "
            f"(turn {following.turn_seq}, {when(following.at)})."
        )
    if task.status == "closed":
        rejected = next((e for e in reversed(asked) if e.answer == "reject"), None)
        how = f": rejected by {_one_line(rejected.answered_by or '')}" if rejected else ""
        return f"The cycle ended: task #{task.id} closed at {when(task.updated_at)}{how}."
    return f"The cycle goes on: task #{task.id} is at {task.status}."


def with_outcome(record: str, section: str) -> str:
    """`record` with its outcome replaced by `section`. The mark is the record's last line of
    its own (person and agent text in a record is quoted), so what follows it is ours."""
    base, mark, _ = record.rpartition(OUTCOME_MARK)
    if not mark:
        base = record.rstrip() + "\n\n"
    return f"{base}{OUTCOME_MARK}{section}"


async def complete_records(ctx: Ctx, task_id: int) -> None:
    """Write the task's rulings' outcome ledger rows, then rewrite the Outcome of every
    decision record of the task. Never raises for a file."""
    outcomes = {o.verdict_id: o for o in await ctx.store.settle_outcomes(task_id)}
    if ctx.data_dir is None:
        return
    task = await ctx.store.task(task_id)
    if task is None:
        return
    history = await ctx.store.history(task_id)
    escalations = await ctx.store.escalations(task_id)
    root = os.path.realpath(os.path.join(ctx.data_dir, "decisions"))
    for i, verdict in enumerate(history.verdicts):
        path = verdict.record_path
        if not path or os.path.dirname(os.path.realpath(path)) != root:
            continue  # only records this data folder wrote
        following = history.verdicts[i + 1] if i + 1 < len(history.verdicts) else None
        section = outcome_section(
            verdict, following, task, history.turns, escalations, outcomes.get(verdict.id)
        )
        try:
            await asyncio.to_thread(_rewrite, path, section)
        except OSError as exc:
            log.warning("decision record %s not completed: %s", path, exc)


def _rewrite(path: str, section: str) -> None:
    with open(path, encoding="utf-8") as fh:
        record = fh.read()
    text = with_outcome(record, section)
    if text == record:
        return
    files.write(path, text)  # already in a worker thread (complete_records)
