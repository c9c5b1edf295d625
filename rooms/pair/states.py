"""The task state machine of DESIGN §3 as an explicit table.

Every status change goes through `next_status`, which says where an event leads or raises
`IllegalTransition`. The store writes the result with compare-and-swap on the task's version.
"""

from __future__ import annotations

from rooms.model import Status

# Events: the marker or verdict a turn produced, or what a person or a detector did.
#   owner:     DONE, BLOCKED, NEEDS_CONTEXT, deadlock
#   reviewer:  APPROVED, CHANGES_REQUESTED, BLOCKED, NEEDS_CONTEXT, deadlock
#   arbiter:   PROCEED, REVISE, RESET, ESCALATE
#   human:     answer, approve, reject, stop
#   finalize:  closed (the owner wrapped up), changed (the owner changed the work after approval)
TRANSITIONS: dict[Status, dict[str, Status]] = {
    "owner_turn": {
        "DONE": "review_turn",
        "BLOCKED": "arbitration",
        "NEEDS_CONTEXT": "arbitration",
        "deadlock": "arbitration",
        "ceiling": "waiting_human",
        "failed": "waiting_human",
        "stop": "closed",
    },
    "review_turn": {
        "APPROVED": "finalize",
        "CHANGES_REQUESTED": "owner_turn",
        "BLOCKED": "arbitration",
        "NEEDS_CONTEXT": "arbitration",
        "deadlock": "arbitration",
        "ceiling": "waiting_human",
        "failed": "waiting_human",
        "stop": "closed",
    },
    "arbitration": {
        "PROCEED": "review_turn",
        "REVISE": "owner_turn",
        "RESET": "owner_turn",
        "ESCALATE": "waiting_human",
        "ceiling": "waiting_human",
        "failed": "waiting_human",
        "stop": "closed",
    },
    "waiting_human": {
        "answer": "owner_turn",
        "approve": "owner_turn",
        "reject": "closed",
        "stop": "closed",
    },
    "finalize": {
        "closed": "closed",
        "changed": "review_turn",
        "ceiling": "waiting_human",  # changed again, past a ceiling or too often (pair/wrapups)
        "failed": "waiting_human",
        "stop": "closed",
    },
    "closed": {},
}

# Who acts in each status: the role of the next turn, or None when nobody runs.
ACTOR: dict[Status, str | None] = {
    "owner_turn": "owner",
    "review_turn": "reviewer",
    "arbitration": "arbiter",
    "waiting_human": None,
    "finalize": "owner",
    "closed": None,
}


class IllegalTransition(ValueError):
    def __init__(self, status: str, event: str) -> None:
        super().__init__(f"no transition from {status!r} on {event!r}")
        self.status = status
        self.event = event


def next_status(status: Status, event: str) -> Status:
    try:
        return TRANSITIONS[status][event]
    except KeyError:
        raise IllegalTransition(status, event) from None


def is_open(status: Status) -> bool:
    return status != "closed"
