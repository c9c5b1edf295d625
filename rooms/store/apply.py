"""The store's one composite write: apply a `Change` inside an open transaction.

Every guard is checked before anything is visible to others, and any lost guard raises `Abort`,
which rolls the whole transaction back: a change is applied completely or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import aiosqlite

from rooms.machine import CLOSED, SUMMONED, WAITING_HUMAN, IllegalTransition, StateTable
from rooms.model import Task
from rooms.records import Change
from rooms.store.rows import Abort, enqueue, load_task, one, record_event

Tables = Callable[[str], StateTable]  # a protocol's name → its state table


async def apply_change(db: aiosqlite.Connection, c: Change, tables: Tables) -> Task:
    if c.event_id and not await record_event(db, c.event_id, c.now):
        raise Abort  # this inbound event was handled before
    task = await load_task(db, c.task_id)
    if c.expect_version is not None and task.version != c.expect_version:
        raise Abort
    if c.expect_lease is not None:
        lease = await one(db, "SELECT lease_owner FROM tasks WHERE id=?", (c.task_id,))
        if lease is None or lease[0] != c.expect_lease:
            raise Abort
    if c.message is not None and task.status == CLOSED:
        raise Abort  # it closed meanwhile: the caller re-reads (and may open a new task)
    if c.event is not None and c.expect_version is None:
        raise ValueError("a status change needs expect_version (compare-and-swap)")

    if c.turn is not None:
        await _finish_turn(db, c)
    await _insert_firing(db, c)
    if c.verdict is not None:
        v = c.verdict
        await db.execute(
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
    if c.message is not None:
        m = c.message
        before = await one(
            db, "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE task_id=?", (c.task_id,)
        )
        await db.execute(
            "INSERT INTO messages (task_id, user, text, kind, before_seq, event_id, at)"
            " VALUES (?,?,?,?,?,?,?)",
            (c.task_id, m.user, m.text, m.kind, before[0], m.event_id, c.now),
        )
    if c.answer is not None:
        cursor = await db.execute(
            "UPDATE escalations SET status='answered', answer=?, answered_by=?, answered_at=?"
            " WHERE id=? AND task_id=? AND status='open'",
            (c.answer.answer, c.answer.user, c.now, c.answer.escalation_id, c.task_id),
        )
        if cursor.rowcount != 1:
            raise Abort  # answered or closed meanwhile: a stale answer changes nothing

    if c.summon is not None:
        await _request_summon(db, task, c, tables(task.protocol))
    if c.event is not None:
        await _transition(db, task, c, tables(task.protocol))
    if c.verdict is not None or c.take_summon:
        # A ruling answers a pending `arbitrate`, also one made while a detector's arbitration
        # was under way (its note reached that arbiter's prompt). One that waits out a question
        # to the people stays pending: the arbiter rules once the task goes on.
        await db.execute("UPDATE tasks SET summon=NULL WHERE id=?", (c.task_id,))
    await _counters(db, c)
    for draft in c.outbox:
        await enqueue(db, draft, c.task_id, c.now)
    if c.escalation is not None:  # announced after the change's other posts, which explain it
        e = c.escalation
        cursor = await db.execute(
            "INSERT INTO escalations (task_id, kind, question, options, reason, created_at)"
            " VALUES (?,?,?,?,?,?)",
            (c.task_id, e.kind, e.question, json.dumps(list(e.options)), e.reason, c.now),
        )
        await enqueue(db, e.post(int(cursor.lastrowid or 0)), c.task_id, c.now)
    return await load_task(db, c.task_id)


async def _finish_turn(db: aiosqlite.Connection, c: Change) -> None:
    assert c.turn is not None
    t = c.turn
    cursor = await db.execute(
        "UPDATE turns SET status=?, output=?, structured=?, marker=?, unmarked=?, error_code=?,"
        " error=?, tree=?, session_id=COALESCE(?, session_id), ended_at=?"
        " WHERE id=? AND task_id=? AND status='running'",
        (
            t.status,
            t.output,
            json.dumps(t.structured) if t.structured is not None else None,
            t.marker,
            t.unmarked,
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
    await db.execute(
        "INSERT INTO usage (turn_id, task_id, input_tokens, output_tokens, cost_usd, at)"
        " VALUES (?,?,?,?,?,?)",
        (t.turn_id, c.task_id, u.input_tokens, u.output_tokens, u.cost_usd, c.now),
    )
    await db.execute(
        "UPDATE tasks SET tokens = tokens + ?, cost_usd = cost_usd + ? WHERE id=?",
        (u.tokens, u.cost_usd, c.task_id),
    )


async def _insert_firing(db: aiosqlite.Connection, c: Change) -> None:
    if c.firing is None:
        return
    f = c.firing
    await db.execute(
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


async def _transition(db: aiosqlite.Connection, task: Task, c: Change, table: StateTable) -> None:
    """The move the change names must be in the task's protocol table (IllegalTransition is a
    bug: it rolls back). A protocol's decision names its target; a person's (stop, answer) may
    leave it to the table."""
    assert c.event is not None
    new = table.next(task.status, c.event)
    if c.status is not None and c.status != new:
        raise IllegalTransition(task.status, f"{c.event} → {c.status}", table.protocol)
    cursor = await db.execute(
        "UPDATE tasks SET status=?, version = version + 1, updated_at=?,"
        " closed_at = CASE WHEN ?=? THEN ? ELSE closed_at END,"
        " failures = 0"
        " WHERE id=? AND version=?",
        (new, c.now, new, CLOSED, c.now, c.task_id, c.expect_version),
    )
    if cursor.rowcount != 1:
        raise Abort
    if new == CLOSED:
        await db.execute(
            "UPDATE tasks SET lease_owner=NULL, lease_until=NULL WHERE id=?", (c.task_id,)
        )
    if new == CLOSED:  # a pending `arbitrate` is moot once the task is closed
        await db.execute("UPDATE tasks SET summon=NULL WHERE id=?", (c.task_id,))
    if task.status == WAITING_HUMAN or new == CLOSED:
        # The question is moot once the task moves on: a later click on it is stale.
        await db.execute(
            "UPDATE escalations SET status='closed' WHERE task_id=? AND status='open'",
            (c.task_id,),
        )


async def _request_summon(
    db: aiosqlite.Connection, task: Task, c: Change, table: StateTable
) -> None:
    assert c.summon is not None
    if SUMMONED not in table.transitions.get(task.status, {}):
        raise Abort  # it moved on meanwhile (e.g. to the arbiter): the caller re-reads
    cursor = await db.execute(
        "UPDATE tasks SET summon=? WHERE id=? AND summon IS NULL",
        (c.summon.model_dump_json(), c.task_id),
    )
    if cursor.rowcount != 1:
        raise Abort  # one is pending already: the caller re-reads and says so


async def _counters(db: aiosqlite.Connection, c: Change) -> None:
    sets: list[str] = []
    if c.rounds == "reset":
        sets.append("rounds = 0")
    elif c.rounds == "inc":
        sets.append("rounds = rounds + 1")
    if c.count_arbitration:
        sets.append("arbitrations = arbitrations + 1")
    if c.failures == "reset":
        sets.append("failures = 0")
    elif c.failures == "inc":
        sets.append("failures = failures + 1")
    if c.grant:
        sets.append("grants = grants + 1")
    if sets:
        await db.execute(f"UPDATE tasks SET {', '.join(sets)} WHERE id=?", (c.task_id,))
