"""A task's history kept by its driver between steps, instead of read again before every step.

Reading the whole history before each step made a task's cost quadratic: with 1 MB answers a
step read 9 ms of rows at round 1 and 138 ms by round 20. While the driver holds the lease only
two kinds of writers touch the task (rooms/core/protocol.py, `Step.after`): the driver itself,
which knows what it wrote, and people, whose messages are read by id (`since`) in the round
trip that begins a turn, and in the one that ends it when they wrote while it ran (the end is
then decided again: rooms/store/steps.py). Everything else people do (stop, answer,
grant) moves the task's version, and so does another engine taking the task over: the kept
history is valid for one version only, and the driver reads the store again when the task it
holds is not at that version (a lost race, a restart, another engine's change).

What the driver appends in memory is the turn it began and how that turn ended, exactly as the
store writes them (`ended`). A change that writes more history than that (a detector's firing,
a ruling, a message, an answer) is not mirrored: the next step reads the store again, so ids and
columns the store assigns are never guessed.

Bounded: a history whose turn outputs pass `MAX_KEPT_CHARS` is not kept (each step reads it, as
before). A kept history is dropped with its driver, when the task stops being driven.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from rooms.base.model import Task, Turn
from rooms.base.records import Change, Message, TurnEnd
from rooms.judge.history import History

MAX_KEPT_CHARS = 256 * 1024 * 1024


@dataclass
class KeptHistory:
    history: History | None = None
    version: int | None = None  # the task version it is valid for

    def valid_for(self, task: Task) -> History | None:
        """The kept history when it is the task's at this version, else None (read the store)."""
        if self.history is not None and self.version == task.version:
            return self.history
        return None

    def load(self, history: History, task: Task) -> History:
        """`history` was just read from the store for `task` at its version."""
        self._keep(history, task.version)
        return history

    def forget(self) -> None:
        self.history, self.version = None, None

    def keep_after(self, history: History, change: Change, applied: Task | None) -> None:
        """`change` was applied (`applied`: the task after it, None when it lost) to a task whose
        history, with the turn as it began and the messages read since, is `history`."""
        if applied is None or not _mirrored(change):
            self.forget()
            return
        if change.turn is not None:
            turns = [
                ended(t, change.turn) if t.id == change.turn.turn_id else t for t in history.turns
            ]
            history = History(
                turns, history.messages, history.verdicts, history.firings, history.waited_s
            )
        self._keep(history, applied.version)

    def _keep(self, history: History, version: int) -> None:
        if sum(len(t.output) for t in history.turns) > MAX_KEPT_CHARS:
            self.forget()
            return
        self.history, self.version = history, version


def last_message_id(history: History) -> int:
    return max((m.id for m in history.messages), default=0)


def with_messages(history: History, new: list[Message]) -> History:
    """`history` with the messages read since its last one."""
    if not new:
        return history
    known = {m.id for m in history.messages}
    messages = [*history.messages, *(m for m in new if m.id not in known)]
    return History(history.turns, messages, history.verdicts, history.firings, history.waited_s)


def ended(turn: Turn, end: TurnEnd) -> Turn:
    """`turn` as the store has it once `end` was applied (rooms/store/apply.py `_finish_turn`)."""
    structured = None
    if end.structured is not None:  # stored as JSON: read back the way the store reads it
        data = json.loads(json.dumps(end.structured))
        structured = data if isinstance(data, dict) else None
    return turn.model_copy(
        update={
            "status": end.status,
            "output": end.output,
            "structured": structured,
            "marker": end.marker,
            "unmarked": end.unmarked,
            "marker_source": end.marker_source,
            "marker_doubt": end.marker_doubt,
            "error": end.error,
            "tree": end.tree,
            "session_id": end.session_id if end.session_id is not None else turn.session_id,
            "ended_at": end.ended_at,
        }
    )


def _mirrored(change: Change) -> bool:
    """Whether the change writes no history but the turn's end (see the module's docstring)."""
    return (
        change.firing is None
        and change.verdict is None
        and change.message is None
        and change.answer is None
        and change.summon is None
    )
