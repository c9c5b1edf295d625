"""Replaying a transcript through the engine's own parsers and detectors (DESIGN §10).

Each turn goes through what the engine would run after it: owner and reviewer turns through
`turn_objects.read_turn` (their object when the transcript gives a valid one, else the marker
line of their text) and then `detectors.check` over the history so far; arbiter turns through
`verdicts.parse_ruling` and into the history as a ruling; human turns into the history as human
messages. Rulings and human messages reset what they reset in the detectors. There is no clock
in a transcript, so the time, token and cost ceilings never fire here; the turn ceiling does
(every owner, reviewer and arbiter turn counts, as in the engine).
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace

from pydantic import BaseModel

from rooms.base.model import Firing, Thresholds
from rooms.base.words import ARBITER, HUMAN, PROCEED
from rooms.judge.detectors import check, remembers_proceed
from rooms.judge.finding_ledger import Ledger
from rooms.judge.steps import Step, bounded
from rooms.judge.transcript import Transcript
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


def replay(t: Transcript, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[ReplayRow]:
    """One row per turn: its marker or verdict, and the detector that fires after it."""
    # No clock, no usage in a transcript: those ceilings are switched off, not just fed zeros
    # (a threshold of 0 would otherwise fire on the zeros).
    limits = replace(thresholds, max_wall_s=math.inf, max_tokens=sys.maxsize, max_cost_usd=math.inf)
    steps: list[Step] = []
    agent_turns = 0
    last_firing: Firing | None = None
    proceeded: set[str] = set()  # firings ruled PROCEED on, as the engine remembers them
    rows: list[ReplayRow] = []
    ledger = Ledger()  # the structured reviews' findings, numbered as the engine numbers them
    for index, turn in enumerate(t.turns):
        marker: str | None = None
        verdict: str | None = None
        deadlock: str | None = None
        source: str | None = None
        doubt: str | None = None
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
