"""How many open tasks one channel, and one person in it, may have at once.

Every open task holds a worktree, a container per role and a share of the machine; without a
cap one person (no approver needed: anyone in the channel opens tasks) opened 60 tasks and 420
runner calls in seconds. The caps are group settings (`max_open_tasks`,
`max_open_tasks_per_person`); the store checks them in the transaction that opens the task, so
concurrent messages cannot all slip under a cap, and a refused message gets a private answer.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PER_CHANNEL = 20
DEFAULT_PER_PERSON = 5


@dataclass(frozen=True)
class OpenCaps:
    per_channel: int = DEFAULT_PER_CHANNEL
    per_person: int = DEFAULT_PER_PERSON


class CapReached(Exception):
    """The task was not opened: a cap is reached. `str()` is the answer for the person."""

    def __init__(self, user: str, caps: OpenCaps, *, channel_open: int, theirs: int) -> None:
        if theirs >= caps.per_person:
            text = (
                f"{user}: you already have {theirs} open tasks here, the most one person may "
                f"have (`max_open_tasks_per_person` = {caps.per_person}). Finish or `stop` one "
                "of them first; this message opened no task."
            )
        else:
            text = (
                f"{user}: this channel already has {channel_open} open tasks, the most it may "
                f"have (`max_open_tasks` = {caps.per_channel}). Wait until one is finished or "
                "stopped; this message opened no task."
            )
        super().__init__(text)


def check(user: str, caps: OpenCaps, *, channel_open: int, theirs: int) -> None:
    """Raise CapReached when one more task would pass a cap."""
    if channel_open >= caps.per_channel or theirs >= caps.per_person:
        raise CapReached(user, caps, channel_open=channel_open, theirs=theirs)
