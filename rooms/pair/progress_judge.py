"""Asking the progress judge after a review (rooms/judge/no_progress.py says when and what it
means): the group's first reference model, one short call from the host, bounded in time. A
failure or timeout counts as "yes"; a group without a reference model has no judge."""

from __future__ import annotations

import asyncio
import logging

from rooms.base.model import Firing, Turn
from rooms.base.words import NO_PROGRESS, REVIEWER
from rooms.core.protocol import Step
from rooms.judge import no_progress
from rooms.judge.detectors import Step as HistoryStep
from rooms.judge.detectors import since_reset
from rooms.references.port import ReferenceFailed

log = logging.getLogger(__name__)


async def judge_progress(step: Step, steps: list[HistoryStep], turn: Turn) -> Firing | None:
    """The judgment after review `turn` as a firing to store (its extra says whether it fires),
    or None when no judge is asked (not due, or no model for it)."""
    if not step.references:
        return None
    window = since_reset(steps)
    if not no_progress.due(window, step.limits.no_progress_rounds):
        return None
    judge = step.references[0]
    question = no_progress.prompt(step.task.text, window)
    raw, cost, tokens = "", 0.0, 0
    try:
        timeout = min(judge.timeout_s, no_progress.JUDGE_TIMEOUT_S)
        answer = await asyncio.wait_for(judge.ask(question, timeout=timeout), timeout)
    except TimeoutError:
        judgment = no_progress.failed(f"timed out after {timeout:g} s")
    except ReferenceFailed as exc:
        judgment = no_progress.failed(f"failed: {exc}")
    except Exception as exc:  # a judge's bug must not stop the pair: when in doubt, go on
        log.warning("progress judge %s raised %r", judge.name, exc)
        judgment = no_progress.failed(f"failed: {type(exc).__name__}")
    else:
        raw, cost = answer.text, answer.cost_usd
        tokens = answer.input_tokens + answer.output_tokens
        judgment = no_progress.read(raw)
    return no_progress.firing(
        judgment,
        _previous(step, turn),
        round_no=no_progress.unapproved_rounds(window),
        cost_usd=cost,
        tokens=tokens,
        judge=f"{judge.name} ({judge.model})",
        raw=raw,
    )


def _previous(step: Step, turn: Turn) -> no_progress.Judgment | None:
    """The judgment stored after the review before `turn`, if that review was judged and
    nothing reset the window in between (a human message or a ruling is newer than it)."""
    reviews = [t for t in step.history.pair_done if t.role == REVIEWER and t.seq < turn.seq]
    if not reviews:
        return None
    before = reviews[-1]
    if any(v.turn_seq > before.seq for v in step.history.verdicts):
        return None
    if any(m.before_seq > before.seq for m in step.history.messages):
        return None
    judged = next(
        (
            f
            for f in reversed(step.history.firings)
            if f.firing.detector == NO_PROGRESS and f.turn_id == before.id
        ),
        None,
    )
    return no_progress.stored(judged.firing.extra) if judged is not None else None
