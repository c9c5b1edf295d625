"""Context that does not grow with the conversation (issue 11, part 3): how long an owner's or
reviewer's session is resumed, and what a resumed turn is told.

A resumed agent session re-reads everything said in it on every turn, so its input grows with
each round. These bounds keep it flat:

- a session is resumed for at most `GroupPolicy.session_turns` turns, and only while the turn
  outputs it has read stay within `session_chars`; otherwise the turn starts a fresh session,
  whose prompt is self-contained and bounded (the task, the people's messages, the rulings, the
  newest turns in full within `recent_chars`, the older ones one line each, capped);
- a resumed turn is quoted only the turns since its own last turn in that session (the other
  side's new turns; the task, the people's messages and the rulings are always quoted whole):
  the session already holds the rest, and sending it again would double it.

With outputs of at most O characters and a fresh prompt of at most P, a turn's input is at most
P + session_turns × (P_delta + O), whatever the number of rounds (tests/rooms/test_sessions.py
states it; tests/bench/bench_context.py measures it against resending the whole transcript).
"""

from __future__ import annotations

from rooms.base.model import Turn
from rooms.base.words import ARBITER
from rooms.judge.history import History


def session_chain(history: History, role: str, session: str) -> list[Turn]:
    """The finished turns of `role` that make up `session`, latest first: the turn that ended
    with it, the turn whose session it resumed, and so on."""
    done = [t for t in history.done if t.role == role]
    chain: list[Turn] = []
    wanted: str | None = session
    for turn in reversed(done):
        if wanted is None:
            break
        if turn.session_id == wanted:
            chain.append(turn)
            wanted = turn.resumed_from
    return chain


def resume_for(
    history: History, role: str, session_turns: int, session_chars: int | None = None
) -> str | None:
    """The session the next `role` turn resumes, or None for a fresh one: the usual choice
    (History.session_for) unless that session already holds `session_turns` turns, or the
    turn outputs it has read (its own and the other side's since it began) pass
    `session_chars` characters."""
    session = history.session_for(role)
    if session is None:
        return None
    chain = session_chain(history, role, session)
    if len(chain) >= session_turns:
        return None
    if session_chars is not None and chain:
        began = chain[-1].seq
        seen = sum(len(t.output) for t in history.done if t.seq >= began and t.role != ARBITER)
        if seen > session_chars:
            return None
    return session


def resumed_since(history: History, role: str, session: str | None) -> int | None:
    """The seq of `role`'s last turn in `session` (what a resumed turn has seen), or None."""
    if session is None:
        return None
    chain = session_chain(history, role, session)
    return chain[0].seq if chain else None
