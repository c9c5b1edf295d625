"""The store's one composite write: apply a `Change` inside an open transaction (on aiosqlite's
worker thread, in one round trip: see connection.py).

Every guard is checked before anything is visible to others, and any lost guard raises `Abort`,
which rolls the whole transaction back: a change is applied completely or not at all.

What the change does to the task's own row (its transition with compare-and-swap, its counters,
the turn's tokens and cost) is one UPDATE that also returns the row, and the change's posts are
one `executemany`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rooms.base.machine import IllegalTransition, StateTable
from rooms.base.model import Summon, Task
from rooms.base.records import Change, Message
from rooms.base.words import CLOSED, SUMMONED, WAITING_HUMAN
from rooms.store import history_rows
from rooms.store.rows import Abort, enqueue, enqueue_all, load_task, one, record_event, to_task

Tables = Callable[[str], StateTable]  # a protocol's name → its state table


def apply_change(db: sqlite3.Connection, c: Change, tables: Tables) -> Task:
    """Apply `c` to its task, in this order: the guards (nothing is written when one is lost),
    the records of what happened (the turn, a detector's firing, a verdict, a message, an
    answer), the task's own row (its move, a summons), then what follows from the move (open
    questions closed) and the posts, the new question last. The task as it is after."""
    task = _guarded_task(db, c)
    new = _target(task, c, tables(task.protocol)) if c.event is not None else None

    if c.turn is not None:
        _finish_turn(db, c)
    _insert_firing(db, c)
    _insert_verdict(db, c)
    _insert_message(db, c)
    _answer_escalation(db, c)

    if c.summon is not None:
        _request_summon(db, task, c, tables(task.protocol))
    after = _update_task(db, c, new)
    if new is not None and (task.status == WAITING_HUMAN or new == CLOSED):
        # The question is moot once the task moves on: a later click on it is stale.
        db.execute(
            "UPDATE escalations SET status='closed' WHERE task_id=? AND status='open'",
            (c.task_id,),
        )
    enqueue_all(db, c.outbox, c.task_id, c.now)
    _open_escalation(db, c)  # announced after the change's other posts, which explain it
    return after if after is not None else load_task(db, c.task_id)


def _guarded_task(db: sqlite3.Connection, c: Change) -> _Current:
    """The task as the change expects it, or Abort: the event not handled before, the task
    there, its version and lease the ones the change was decided on, and a message only for an
    open task."""
    if c.event_id and not record_event(db, c.event_id, c.now):
        raise Abort  # this inbound event was handled before
    # Only what the guards need: the task as a model is built once, from the UPDATE's row.
    # The last message id too, when the change says which it saw: its messages are read only
    # when there are new ones (rooms/store/steps.py).
    news = ", (SELECT MAX(m.id) FROM messages m WHERE m.task_id = t.id) AS last_message"
    row = one(
        db,
        "SELECT status, version, protocol, lease_owner, summon"
        + (news if c.seen_message is not None else "")
        + " FROM tasks t WHERE id=?",
        (c.task_id,),
    )
    if row is None:
        raise Abort
    if c.seen_message is not None:
        _check_news(db, c, c.seen_message, row["last_message"], row["summon"])
    task = _Current(row["status"], row["version"], row["protocol"])
    if c.expect_version is not None and task.version != c.expect_version:
        raise Abort
    if c.expect_lease is not None and row["lease_owner"] != c.expect_lease:
        raise Abort
    if c.message is not None and task.status == CLOSED:
        raise Abort  # it closed meanwhile: the caller re-reads (and may open a new task)
    if c.event is not None and c.expect_version is None:
        raise ValueError("a status change needs expect_version (compare-and-swap)")
    return task


class Stale(Abort):
    """The change was decided without what people did meanwhile (`Change.seen_message`): the
    messages written since and the pending summon as it is now, for the decision to be made
    again. Nothing was written."""

    def __init__(self, messages: list[Message], summon: Summon | None) -> None:
        super().__init__("stale")
        self.messages, self.summon = messages, summon


def _check_news(
    db: sqlite3.Connection, c: Change, seen: int, last: int | None, summon_json: str | None
) -> None:
    new = last is not None and last > seen
    messages = history_rows.messages(db, c.task_id, seen) if new else []
    summon = Summon.model_validate_json(summon_json) if summon_json else None
    if messages or summon != c.seen_summon:
        raise Stale(messages, summon)


def _insert_verdict(db: sqlite3.Connection, c: Change) -> None:
    if c.verdict is None:
        return
    v = c.verdict
    db.execute(
        "INSERT INTO verdicts (task_id, turn_id, firing_id, verdict, ruling, readable,"
        " record_path, at, panel_id, tally, fairness) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            c.task_id,
            v.turn_id,
            v.firing_id,
            v.ruling.verdict,
            v.ruling.model_dump_json(),
            v.ruling.readable,
            v.record_path,
            c.now,
            v.panel_id,
            json.dumps(v.tally) if v.tally is not None else None,
            json.dumps(v.fairness) if v.fairness is not None else None,
        ),
    )


def _insert_message(db: sqlite3.Connection, c: Change) -> None:
    if c.message is None:
        return
    m = c.message
    # before_seq: the first turn that can see the message is the next one.
    db.execute(
        'INSERT INTO messages (task_id, "user", text, kind, before_seq, event_id, at)'
        " SELECT ?, ?, ?, ?, COALESCE(MAX(seq), 0) + 1, ?, ? FROM turns WHERE task_id=?",
        (c.task_id, m.user, m.text, m.kind, m.event_id, c.now, c.task_id),
    )


def _answer_escalation(db: sqlite3.Connection, c: Change) -> None:
    if c.answer is None:
        return
    cursor = db.execute(
        "UPDATE escalations SET status='answered', answer=?, answered_by=?, answered_at=?"
        " WHERE id=? AND task_id=? AND status='open'",
        (c.answer.answer, c.answer.user, c.now, c.answer.escalation_id, c.task_id),
    )
    if cursor.rowcount != 1:
        raise Abort  # answered or closed meanwhile: a stale answer changes nothing


def _open_escalation(db: sqlite3.Connection, c: Change) -> None:
    """The question for the people, and its post (which names the new escalation's id)."""
    if c.escalation is None:
        return
    e = c.escalation
    inserted = one(  # RETURNING, not lastrowid: PostgreSQL has no lastrowid
        db,
        "INSERT INTO escalations (task_id, kind, question, options, reason, created_at)"
        " VALUES (?,?,?,?,?,?) RETURNING id",
        (c.task_id, e.kind, e.question, json.dumps(list(e.options)), e.reason, c.now),
    )
    enqueue(db, e.post(int(inserted[0])), c.task_id, c.now)


@dataclass(frozen=True)
class _Current:
    """The task's row as the guards read it."""

    status: str
    version: int
    protocol: str


def _target(task: _Current, c: Change, table: StateTable) -> str:
    """The move the change names must be in the task's protocol table (IllegalTransition is a
    bug: it rolls back). A protocol's decision names its target; a person's (stop, answer) may
    leave it to the table."""
    assert c.event is not None
    new = table.next(task.status, c.event)
    if c.status is not None and c.status != new:
        raise IllegalTransition(task.status, f"{c.event} → {c.status}", table.protocol)
    return new


def _finish_turn(db: sqlite3.Connection, c: Change) -> None:
    assert c.turn is not None
    t = c.turn
    cursor = db.execute(
        "UPDATE turns SET status=?, output=?, structured=?, marker=?, unmarked=?, marker_source=?,"
        " marker_doubt=?, error_code=?,"
        " error=?, tree=?, session_id=COALESCE(?, session_id), ended_at=?"
        " WHERE id=? AND task_id=? AND status='running'",
        (
            t.status,
            t.output,
            json.dumps(t.structured) if t.structured is not None else None,
            t.marker,
            t.unmarked,
            t.marker_source,
            t.marker_doubt,
            t.error_code,
            t.error,
            t.tree,
            t.session_id,
            t.ended_at,
            t.turn_id,
            c.task_id,
        ),
    )
    if cursor.rowcount != 1:
        raise Abort  # the turn was interrupted or finished by someone else
    u = t.usage
    db.execute(
        "INSERT INTO usage (turn_id, task_id, input_tokens, output_tokens, cost_usd, at)"
        " VALUES (?,?,?,?,?,?)",
        (t.turn_id, c.task_id, u.input_tokens, u.output_tokens, u.cost_usd, c.now),
    )


def _insert_firing(db: sqlite3.Connection, c: Change) -> None:
    if c.firing is None:
        return
    f = c.firing
    db.execute(
        "INSERT INTO firings (task_id, turn_id, detector, reason, fingerprint, extra, acted, at)"
        " VALUES (?,?,?,?,?,?,?,?)",
        (
            c.task_id,
            f.turn_id,
            f.firing.detector,
            f.firing.reason,
            f.firing.fingerprint,
            json.dumps(f.firing.extra, default=str),
            f.acted,
            c.now,
        ),
    )


def _update_task(db: sqlite3.Connection, c: Change, new: str | None) -> Task | None:
    """Everything the change does to the task's row, in one UPDATE: the turn's tokens and cost,
    the transition to `new` (compare-and-swap on the version; it resets the failure count and,
    on closing, frees the lease), then the counters. None when the row needs no change."""
    sets: list[str] = []
    args: list[Any] = []
    tokens = (c.turn.usage.tokens if c.turn else 0) + (c.firing.tokens if c.firing else 0)
    cost = (c.turn.usage.cost_usd if c.turn else 0.0) + (c.firing.cost_usd if c.firing else 0.0)
    if c.turn is not None or tokens or cost:
        sets += ["tokens = tokens + ?", "cost_usd = cost_usd + ?"]
        args += [tokens, cost]
    failures = "failures"
    if new is not None:
        sets += ["status = ?", "version = version + 1", "updated_at = ?"]
        args += [new, c.now]
        if new == CLOSED:
            sets += ["closed_at = ?", "lease_owner = NULL", "lease_until = NULL"]
            args += [c.now]
        failures = "0"
    if c.rounds == "reset":
        sets.append("rounds = 0")
    elif c.rounds == "inc":
        sets.append("rounds = rounds + 1")
    if c.count_arbitration:
        sets.append("arbitrations = arbitrations + 1")
    if c.failures == "reset":
        failures = "0"
    elif c.failures == "inc":
        failures = f"{failures} + 1"
    if failures != "failures":
        sets.append(f"failures = {failures}")
    if c.grant:
        sets.append("grants = grants + 1")
    if c.approved_tree is not None:
        sets.append("approved_tree = ?")
        args.append(c.approved_tree)
    if c.verdict is not None or c.take_summon or new == CLOSED:
        # A ruling answers a pending `arbitrate`, also one made while a detector's arbitration
        # was under way (its note reached that arbiter's prompt); closing makes one moot. One
        # that waits out a question to the people stays pending: the arbiter rules once the
        # task goes on.
        sets.append("summon = NULL")
    if not sets:
        return None
    where = "id = ?"
    args.append(c.task_id)
    if new is not None:
        where += " AND version = ?"
        args.append(c.expect_version)
    rows = db.execute(
        f"UPDATE tasks SET {', '.join(sets)} WHERE {where} RETURNING *", tuple(args)
    ).fetchall()
    if not rows:
        raise Abort  # the version moved on (or the task is gone)
    return to_task(rows[0])


def _request_summon(db: sqlite3.Connection, task: _Current, c: Change, table: StateTable) -> None:
    assert c.summon is not None
    if SUMMONED not in table.transitions.get(task.status, {}):
        raise Abort  # it moved on meanwhile (e.g. to the arbiter): the caller re-reads
    cursor = db.execute(
        "UPDATE tasks SET summon=? WHERE id=? AND summon IS NULL",
        (c.summon.model_dump_json(), c.task_id),
    )
    if cursor.rowcount != 1:
        raise Abort  # one is pending already: the caller re-reads and says so
