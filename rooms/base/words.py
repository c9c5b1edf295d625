"""The words of a room, defined here once for all of Tribunal (DESIGN §2-§5): roles, markers,
verdicts, the statuses and events every protocol shares, and the detectors' names.

Every other module imports these names instead of writing the strings: a word spelt twice can
drift (a reviewer marker compared as "APPROVED" in one file and matched as "Approved" in another),
and a grep for a role or a verdict then finds the one place that says what it is.

Standard library only: `markers.py` (the parser of a turn's marker line) stands on this module,
and tests/rooms/marker_probe.py loads both by their paths under a bare interpreter (Debian's
Python 3.11.2, without the venv's packages).
"""

from __future__ import annotations

from typing import Final, Literal, get_args

# --- roles ------------------------------------------------------------------------------------

Role = Literal["owner", "reviewer", "arbiter"]  # the pair's agent roles
ROLES: tuple[Role, ...] = get_args(Role)
OWNER: Final = "owner"
REVIEWER: Final = "reviewer"
ARBITER: Final = "arbiter"
WORK_ROLES: tuple[Role, ...] = (OWNER, REVIEWER)  # the two sides that do the work


def other_side(role: str) -> Role:
    """The work role facing `role`: the reviewer for the owner, the owner for the reviewer."""
    return REVIEWER if role == OWNER else OWNER


HUMAN: Final = "human"  # a person, as a transcript or a history names them
# Who speaks in a transcript or a history: an agent of the pair, or a person.
Speaker = Literal["owner", "reviewer", "arbiter", "human"]
SPEAKERS: tuple[Speaker, ...] = get_args(Speaker)
# The engine's own voice in a room (an Outbound's persona when no agent speaks).
TRIBUNAL: Final = "tribunal"
# The runs of tests an arbiter asked for in a pair's task (rooms/pair/resolving.py): their role
# is this prefix and the resolve actor's key ("resolve:positions"); they are not pair rounds.
RESOLVING_PREFIX: Final = "resolve:"


def is_resolving(role: str) -> bool:
    """Whether a turn of `role` is a run of the tests an arbiter asked for."""
    return role.startswith(RESOLVING_PREFIX)


# --- verdicts (DESIGN §5) ---------------------------------------------------------------------

Verdict = Literal["PROCEED", "REVISE", "RESET", "ESCALATE"]  # the arbiter's rulings
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
PROCEED: Final = "PROCEED"
REVISE: Final = "REVISE"
RESET: Final = "RESET"
ESCALATE: Final = "ESCALATE"
# The verdicts that decide between the two positions (PROCEED: the owner's work stands; REVISE:
# the reviewer's objections must be met; RESET: the work as it stands is dropped for a new
# direction), as opposed to asking people. The swap check reads these twice (rooms/judge/positions).
SIDING: tuple[Verdict, ...] = (PROCEED, REVISE, RESET)

# --- markers (DESIGN §3): the words a turn's first line says, and the pair's events ------------

DONE: Final = "DONE"
NEEDS_CONTEXT: Final = "NEEDS_CONTEXT"
BLOCKED: Final = "BLOCKED"
APPROVED: Final = "APPROVED"
CHANGES_REQUESTED: Final = "CHANGES_REQUESTED"
# Each side's markers as types, for the structured turns' schemas (rooms/judge/turn_objects.py).
OwnerMarker = Literal["DONE", "NEEDS_CONTEXT", "BLOCKED"]
ReviewerMarker = Literal["APPROVED", "CHANGES_REQUESTED", "NEEDS_CONTEXT", "BLOCKED"]
OWNER_MARKERS: tuple[OwnerMarker, ...] = get_args(OwnerMarker)
REVIEWER_MARKERS: tuple[ReviewerMarker, ...] = get_args(ReviewerMarker)
STUCK = (BLOCKED, NEEDS_CONTEXT)  # either side cannot go on without help
# What a turn with no marker counts as (it is stored as unmarked).
UNMARKED: dict[str, str] = {OWNER: DONE, REVIEWER: CHANGES_REQUESTED}

# --- what every protocol shares (rooms/base/machine.py) ---------------------------------------

# Two statuses: `closed` ends a task; `waiting_human` waits for a person's answer.
CLOSED: Final = "closed"
WAITING_HUMAN: Final = "waiting_human"
# What a person does, in every protocol.
STOP: Final = "stop"
ANSWER: Final = "answer"
APPROVE: Final = "approve"
REJECT: Final = "reject"
# A person picks one of an escalation's options (rooms.core.choices): a button and a command, not
# an event of its own; the table sees it as an ANSWER carrying the option's text.
CHOOSE: Final = "choose"
# The other words a person gives Tribunal after the mention (or typed after a "/" in the console).
# What each does, who may and its help line: the one command table, rooms/core/command_table.py,
# whose rows must name exactly these (it checks so when imported). No protocol may open with one
# (rooms/core/registry.py), nor with the console's own QUIT.
STATUS: Final = "status"
ARBITRATE: Final = "arbitrate"
HELP: Final = "help"
DASHBOARD: Final = "dashboard"  # an approver asks for a one-time sign-in link
COMMAND_WORDS: tuple[str, ...] = (STOP, STATUS, APPROVE, REJECT, CHOOSE, ARBITRATE, DASHBOARD, HELP)
QUIT: Final = "quit"
# A person's `arbitrate` (rooms.core.summons): a protocol whose table has this event from a status
# lets people call its judge there; the store keeps the request only where the table allows it.
SUMMONED: Final = "summoned"

# --- detectors (DESIGN §4): the names a firing is recorded under -------------------------------

CEILING: Final = "ceiling"  # also the kind of the escalation a ceiling asks people with
BLOCKED_DETECTOR: Final = "blocked"
STAGNATION: Final = "stagnation"
REPEATED_FINDINGS: Final = "repeated_findings"
UNCHANGED: Final = "unchanged"
OSCILLATION: Final = "oscillation"
ROUND_CAP: Final = "round_cap"
NO_PROGRESS: Final = "no_progress"  # a cheap judge's "no" twice (rooms/judge/no_progress.py)
