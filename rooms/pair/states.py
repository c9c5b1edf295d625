"""The owner/reviewer pair's state machine (DESIGN §3) as an explicit table: its statuses, its
events, who acts in each status, and where each event leads.

The pair's `decide` picks the event and reads its target here; the store checks every status
change against this table and writes it with compare-and-swap on the task's version.
"""

from __future__ import annotations

from typing import Final

from rooms.base.machine import StateTable
from rooms.base.words import (
    ANSWER,
    APPROVE,
    APPROVED,
    ARBITER,
    BLOCKED,
    CEILING,
    CHANGES_REQUESTED,
    CLOSED,
    DONE,
    ESCALATE,
    NEEDS_CONTEXT,
    OWNER,
    PROCEED,
    REJECT,
    RESET,
    REVIEWER,
    REVISE,
    STOP,
    SUMMONED,
    WAITING_HUMAN,
)

PROTOCOL: Final = "pair"

# Statuses.
OWNER_TURN: Final = "owner_turn"
REVIEW_TURN: Final = "review_turn"
ARBITRATION: Final = "arbitration"
FINALIZE: Final = "finalize"
RESOLVING: Final = "resolving"  # the arbiter asked for tests before ruling (pair/resolving.py)
STATUSES = (OWNER_TURN, REVIEW_TURN, ARBITRATION, RESOLVING, WAITING_HUMAN, FINALIZE, CLOSED)

# Events: the marker (rooms.base.markers) or verdict (rooms.base.model.VERDICTS) a turn produced, or
# what a person or a detector did.
#   owner:     DONE, BLOCKED, NEEDS_CONTEXT, deadlock
#   reviewer:  APPROVED, CHANGES_REQUESTED, BLOCKED, NEEDS_CONTEXT, deadlock
#   arbiter:   PROCEED, REVISE, RESET, ESCALATE, sent_back (an incomplete ruling, asked again),
#              resolve (it asks for tests before ruling)
#   resolving: resolved (the tests' result is in: the arbiter rules with it)
#   human:     answer, approve, reject, stop, summoned (rooms.base.machine; `arbitrate`),
#              summon_capped (`arbitrate` past the cap of arbitrations: the people decide)
#   finalize:  closed (the owner wrapped up), changed (the owner changed the work after approval)
#   any turn:  ceiling (a ceiling or an engine cap asks the humans), failed (a run failed twice)
DEADLOCK: Final = "deadlock"
FAILED: Final = "failed"
WRAPPED_UP: Final = "closed"
CHANGED: Final = "changed"
SENT_BACK: Final = "sent_back"
SUMMON_CAPPED: Final = "summon_capped"
RESOLVE: Final = "resolve"
RESOLVED: Final = "resolved"

TRANSITIONS: dict[str, dict[str, str]] = {
    OWNER_TURN: {
        DONE: REVIEW_TURN,
        BLOCKED: ARBITRATION,
        NEEDS_CONTEXT: ARBITRATION,
        DEADLOCK: ARBITRATION,
        SUMMONED: ARBITRATION,
        SUMMON_CAPPED: WAITING_HUMAN,
        CEILING: WAITING_HUMAN,
        FAILED: WAITING_HUMAN,
        STOP: CLOSED,
    },
    REVIEW_TURN: {
        APPROVED: FINALIZE,
        CHANGES_REQUESTED: OWNER_TURN,
        BLOCKED: ARBITRATION,
        NEEDS_CONTEXT: ARBITRATION,
        DEADLOCK: ARBITRATION,
        SUMMONED: ARBITRATION,
        SUMMON_CAPPED: WAITING_HUMAN,
        CEILING: WAITING_HUMAN,
        FAILED: WAITING_HUMAN,
        STOP: CLOSED,
    },
    ARBITRATION: {
        PROCEED: REVIEW_TURN,
        REVISE: OWNER_TURN,
        RESET: OWNER_TURN,
        ESCALATE: WAITING_HUMAN,
        SENT_BACK: ARBITRATION,
        RESOLVE: RESOLVING,
        CEILING: WAITING_HUMAN,
        FAILED: WAITING_HUMAN,
        STOP: CLOSED,
    },
    RESOLVING: {
        RESOLVED: ARBITRATION,
        CEILING: WAITING_HUMAN,
        STOP: CLOSED,
    },
    WAITING_HUMAN: {
        ANSWER: OWNER_TURN,
        APPROVE: OWNER_TURN,
        REJECT: CLOSED,
        STOP: CLOSED,
    },
    FINALIZE: {
        WRAPPED_UP: CLOSED,
        CHANGED: REVIEW_TURN,
        SUMMONED: ARBITRATION,
        SUMMON_CAPPED: WAITING_HUMAN,
        CEILING: WAITING_HUMAN,  # changed again, past a ceiling or too often (pair/wrapups)
        FAILED: WAITING_HUMAN,
        STOP: CLOSED,
    },
    CLOSED: {},
}

# Who acts in each status: the role of the next turn, or None when nobody runs.
ACTOR: dict[str, str | None] = {
    OWNER_TURN: OWNER,
    REVIEW_TURN: REVIEWER,
    ARBITRATION: ARBITER,
    RESOLVING: "resolve",  # each run's role is the resolve actor's (pair/resolving.py)
    WAITING_HUMAN: None,
    FINALIZE: OWNER,
    CLOSED: None,
}

# What `status` says about each status.
LABELS: dict[str, str] = {
    OWNER_TURN: "the owner's turn",
    REVIEW_TURN: "the reviewer's turn",
    ARBITRATION: "with the arbiter",
    RESOLVING: "running the tests the arbiter asked for",
    WAITING_HUMAN: "waiting for a person",
    FINALIZE: "approved; the owner is wrapping up",
    CLOSED: "closed",
}

TABLE = StateTable(PROTOCOL, OWNER_TURN, TRANSITIONS, ACTOR)
