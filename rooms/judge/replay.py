"""Replaying a transcript through the engine's own parsers and detectors (DESIGN §10).

Each turn goes through what the engine would run after it: owner and reviewer turns through
`turn_objects.read_turn` (their object when the transcript gives a valid one, else the marker
line of their text) and then `detectors.check` over the history so far; arbiter turns through
`verdicts.parse_ruling` and into the history as a ruling; human turns into the history as human
messages. Rulings and human messages reset what they reset in the detectors. There is no clock
in a transcript, so the time, token and cost ceilings never fire here; the turn ceiling does
(every owner, reviewer and arbiter turn counts, as in the engine).

With recorded judgments (`tribunal replay --judge FILE`, `load_judgments`), the progress judge
of rooms/judge/no_progress.py is replayed offline: where the engine would ask it, the answer
recorded for that turn is read instead (a turn with none recorded counts as "yes", as an
unreadable answer does), and `no_progress` fires on two consecutive "no".
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import replace

from pydantic import BaseModel, ConfigDict, ValidationError

from rooms.base.model import Firing, Thresholds
from rooms.base.words import ARBITER, HUMAN, PROCEED, REVIEWER, WORK_ROLES
from rooms.judge import no_progress
from rooms.judge.detectors import check, remembers_proceed
from rooms.judge.finding_ledger import Ledger
from rooms.judge.steps import Step, bounded, since_reset
from rooms.judge.transcript import Transcript, TranscriptError, read_bounded
from rooms.judge.turn_objects import ReviewerTurn, read_turn
from rooms.judge.verdicts import parse_ruling


class ReplayRow(BaseModel):
    turn: int
    role: str
    marker: str | None
    verdict: str | None
    deadlock: str | None
    # Owner and reviewer turns: where the marker was read from ("object" / "text"), and why
    # it is not the turn's own first marker when in doubt (rooms/judge/turn_objects.py).
    marker_source: str | None = None
    doubt: str | None = None


DEFAULT_THRESHOLDS = Thresholds()  # frozen: safe to share as a default


class RecordedJudgment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: int  # the transcript's index of the review the judgment follows
    answer: str  # what the judge answered, as it answered it


class JudgmentFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    judgments: list[RecordedJudgment]


def load_judgments(path: str) -> dict[int, str]:
    """Recorded judgments, `{"judgments": [{"turn": 7, "answer": "…"}]}`, by turn index."""
    raw = read_bounded(path)
    try:
        parsed = JudgmentFile.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise TranscriptError(
            f'{path}: not a judgments file ({{"judgments": [{{"turn": N, "answer": "…"}}]}}): '
            f"{where}: {first['msg']}"
        ) from None
    return {j.turn: j.answer for j in parsed.judgments}


def replay(
    t: Transcript,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    *,
    judgments: Mapping[int, str] | None = None,
) -> list[ReplayRow]:
    """One row per turn: its marker or verdict, and the detector that fires after it.
    `judgments`: recorded progress judgments by turn index (None: no progress judge)."""
    # No clock, no usage in a transcript: those ceilings are switched off, not just fed zeros
    # (a threshold of 0 would otherwise fire on the zeros).
    limits = replace(thresholds, max_wall_s=math.inf, max_tokens=sys.maxsize, max_cost_usd=math.inf)
    steps: list[Step] = []
    agent_turns = 0
    last_firing: Firing | None = None
    proceeded: set[str] = set()  # firings ruled PROCEED on, as the engine remembers them
    rows: list[ReplayRow] = []
    ledger = Ledger()  # the structured reviews' findings, numbered as the engine numbers them
    judged: dict[int, no_progress.Judgment] = {}  # by the index of the review it followed
    last_review: int | None = None  # the index of the latest review in the window
    for index, turn in enumerate(t.turns):
        marker: str | None = None
        verdict: str | None = None
        deadlock: str | None = None
        source: str | None = None
        doubt: str | None = None
        if turn.role not in WORK_ROLES:
            last_review = None  # a person or a ruling starts the detectors' window again
        if turn.role == HUMAN:
            steps.append(Step(kind="human", role=HUMAN, text=bounded(turn.text), marker=None))
        elif turn.role == ARBITER:
            agent_turns += 1
            verdict = parse_ruling(turn.text, None).verdict
            if verdict == PROCEED and last_firing and remembers_proceed(last_firing.detector):
                proceeded.add(last_firing.fingerprint or "")
            steps.append(Step(kind="ruling", role=ARBITER, text=bounded(turn.text), marker=verdict))
        else:
            agent_turns += 1
            # Raw marker, no unmarked default: the row reports what the turn says. The
            # detectors apply the engine's defaults themselves.
            reading = read_turn(turn.role, turn.text, turn.structured)
            marker, source, doubt = reading.marker, reading.source, reading.doubt
            # The engine stores and compares a structured turn's prose, as here.
            text = reading.prose if reading.prose is not None else turn.text
            open_ids = None
            if isinstance(reading.turn, ReviewerTurn):  # its findings by the engine's ids
                ledger = ledger.after(ledger.numbered(reading.turn))
                open_ids = ledger.open_ids()
            step = Step(
                kind="turn", role=turn.role, text=bounded(text), marker=marker, tree=turn.tree,
                open_ids=open_ids,
            )  # fmt: skip
            steps.append(step)
            firing = check(
                steps,
                limits,
                turns=agent_turns,
                tokens=0,
                cost_usd=0.0,
                started_at=0.0,
                now=0.0,
                proceeded=proceeded,
            )
            window = since_reset(steps)
            if (
                firing is None
                and judgments is not None
                and no_progress.due(window, limits.no_progress_rounds)
            ):
                answer = judgments.get(index)
                now = (
                    no_progress.read(answer)
                    if answer is not None
                    else no_progress.failed("no judgment recorded")
                )
                judged[index] = now
                previous = judged.get(last_review) if last_review is not None else None
                if no_progress.fires(now, previous):
                    firing = no_progress.firing(
                        now, previous, round_no=no_progress.unapproved_rounds(window)
                    )
            if turn.role == REVIEWER:
                last_review = index
            last_firing = firing or last_firing
            deadlock = firing.detector if firing is not None else None
        rows.append(
            ReplayRow(
                turn=index,
                role=turn.role,
                marker=marker,
                verdict=verdict,
                deadlock=deadlock,
                marker_source=source,
                doubt=doubt,
            )  # fmt: skip
        )
    return rows


def format_row(row: ReplayRow) -> str:
    """The line a person reads for one turn, e.g.
    `  3  reviewer  CHANGES_REQUESTED  → deadlock: round_cap`."""
    if row.role == HUMAN:
        what = "(human message)"
    elif row.role == ARBITER:
        what = f"verdict {row.verdict}"
    else:
        what = row.marker or "(no marker)"
    line = f"{row.turn:>3}  {row.role:<8}  {what}"
    if row.deadlock:
        line += f"  → deadlock: {row.deadlock}"
    return line
