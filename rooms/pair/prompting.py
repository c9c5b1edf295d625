"""The prompt of each turn, built from the store (DESIGN §2: agents read each other through the
store, never by scraping the chat).

Every prompt carries the task, the people's messages, the latest turn outputs and the rulings so
far; the arbiter also gets the detector's reason and the counts; the owner after a REVISE or
RESET gets the ruling's conditions or new direction at the top, since that is what it must act on.
Everything a person or an agent wrote is quoted (rooms/judge/quoting.py), the arbiter's rulings
included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rooms.base.model import GroupPolicy, Ruling, Summon, Task, Turn
from rooms.base.records import VerdictRow
from rooms.base.words import (
    ARBITER,
    OWNER,
    OWNER_MARKERS,
    RESET,
    REVIEWER,
    REVIEWER_MARKERS,
    REVISE,
    VERDICTS,
)
from rooms.judge.finding_ledger import ledger_of, open_findings_section, owner_answer_section
from rooms.judge.history import History
from rooms.judge.positions import mask_roles, without_marker
from rooms.judge.quoting import quoted
from rooms.judge.sendback import earlier_send_back, resend_prompt
from rooms.pair.states import FINALIZE


def _either(words: tuple[str, ...]) -> str:
    return f"{', '.join(words[:-1])} or {words[-1]}"


_MARKERS = {
    OWNER: _either(OWNER_MARKERS),
    REVIEWER: _either(REVIEWER_MARKERS),
    ARBITER: f"{_either(VERDICTS)} (as `VERDICT: <word>`)",
}
_OUTPUT_LIMIT = 12_000
_SUMMARY_LINES = 12  # older turns listed one line each in a prompt; the rest are counted
_LINE_CHARS = 160  # characters of one quoted turn; the full output stays in the store
# Characters of the task or of one person's message in a prompt. A pasted log of megabytes would
# otherwise overflow the model's context on every turn; the full text stays in the store.
HUMAN_TEXT_LIMIT = 60_000
_RESUMED = (
    "You are resuming your session: it holds the turns up to your last one. Below are the "
    "people's messages, the rulings, and only the turns since."
)
# Characters of all people's messages together in one prompt: 150 long messages in a room must
# not make every turn fail. The newest come first in full (up to HUMAN_TEXT_LIMIT each), older
# ones are cut to what is left, and the oldest left out with a note once the budget is spent.
PEOPLE_TEXT_BUDGET = 120_000
_SMALLEST_CUT = 400  # below this, an older message is left out rather than cut to a stub


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _one_line_head(text: str, limit: int) -> str:
    """`_one_line(text)`, or a prefix of it longer than `limit` characters: a line of every
    earlier turn goes into each prompt, and collapsing whole 1 MB answers made a task's prompts
    cost more at each round. Only whole words of a growing head of the text are kept, so the
    prefix is the full line's."""
    size = 4 * limit
    while size < len(text):
        head = _one_line(text[:size])
        whole = head.rsplit(" ", 1)[0] if " " in head else ""
        if len(whole) > limit:
            return whole
        size *= 4
    return _one_line(text)


def _bounded(text: str, limit: int, what: str) -> str:
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}\n[… {cut} more characters of {what} cut here; the full text is stored]"


def build_prompt(
    task: Task,
    phase: str,
    role: str,
    history: History,
    policy: GroupPolicy,
    *,
    reason: str = "",
    extra: Sequence[str] = (),
    seats: Mapping[str, str] | None = None,
    since: int | None = None,
) -> str:
    """`extra`: sections placed before "## Your turn" (the arbiter's positions and reference
    opinions). `seats`: role → position letter; the recent turns of those roles are then quoted
    under their letters, their markers left out and their role names masked (fair input,
    rooms/judge/positions). `since`: the seq of the turn a resumed session last saw; only what
    came after it is quoted (rooms/pair/sessions)."""
    task_text = quoted(_bounded(task.text.strip(), HUMAN_TEXT_LIMIT, "the task"))
    # The task is quoted in every prompt, resumed or not: its size does not grow with rounds.
    parts = [f"# Tribunal task #{task.id}: you are the {role}", "## Task", task_text]
    if since is not None:
        parts.append(_RESUMED)
    if role == OWNER:
        parts += _ruling_to_act_on(history)
    if role == ARBITER:
        parts += _arbiter_frame(task, history, policy, reason)
    # The people's messages and the rulings are always quoted whole, resumed or not: they are
    # few and bounded, and an agent must never lose sight of them.
    parts += _messages(history)
    if role != ARBITER:
        parts += _rulings(history)
    parts += _recent_turns(history, policy.recent_turns, seats, since, policy.recent_chars)
    if role in (OWNER, REVIEWER) and phase != FINALIZE:  # structured reviews' findings
        parts += open_findings_section(ledger_of(history.pair_done))
        if role == REVIEWER:
            parts += owner_answer_section(history.pair_done)
    parts += list(extra)
    parts += _your_turn(phase, role)
    return "\n\n".join(p for p in parts if p)


def _ruling_to_act_on(history: History) -> list[str]:
    """A REVISE/RESET that no owner turn has answered yet."""
    if not history.verdicts:
        return []
    latest = history.verdicts[-1]
    answered = any(
        t.role == OWNER and t.seq > latest.turn_seq and t.status == "done" for t in history.turns
    )
    ruling = latest.ruling
    if answered or ruling.verdict not in (REVISE, RESET):
        return []
    # The arbiter's words are agent text: quoted like every other, so a condition cannot pass
    # for one of the engine's sections (a fake "## Your turn", a person's answer).
    if ruling.verdict == RESET:
        lines = ["## The arbiter ruled RESET: start over in this direction"]
        lines.append(quoted(ruling.new_direction.strip()) if ruling.new_direction.strip() else "")
    else:
        lines = ["## The arbiter ruled REVISE: meet these conditions"]
        conditions = [c for c in ruling.conditions if c.strip()]
        lines += [quoted(f"- {c.strip()}") for c in conditions]
        if not conditions and ruling.reasons.strip():
            lines.append(quoted(ruling.reasons.strip()))
    if ruling.reasons.strip() and ruling.verdict == RESET:
        lines += ["Why:", quoted(ruling.reasons.strip())]
    return ["\n".join(x for x in lines if x)]


def _arbiter_frame(task: Task, history: History, policy: GroupPolicy, reason: str) -> list[str]:
    limit = policy.thresholds.max_arbitrations
    parts = [
        "## Why you were called",
        reason or "the pair stopped making progress",
        f"Rounds since the last human message or ruling: {task.rounds}. Turns so far: "
        f"{len(history.turns)}. Arbitrations before this one: {task.arbitrations} of {limit}.",
        _prior_rulings(history.verdicts),
    ]
    if task.summon is not None:
        parts.append(_summoned(task.summon))
    problem = earlier_send_back(history.turns)
    if problem is not None:
        parts.append(resend_prompt(problem))
    return parts


def _summoned(summon: Summon) -> str:
    """A person's `arbitrate` note: their words, quoted like every person's text."""
    lines = [f"## A person called you: {_one_line(summon.by)}"]
    if summon.note.strip():
        note = _bounded(summon.note, HUMAN_TEXT_LIMIT, "the note")
        lines += ["They asked you to look at:", quoted(note)]
    else:
        lines.append("They gave no note: judge the pair's last turns.")
    return "\n".join(lines)


def _prior_rulings(verdicts: list[VerdictRow]) -> str:
    if not verdicts:
        return "There are no prior rulings."
    lines = ["Prior rulings:"]
    for v in verdicts:
        lines.append(f"- turn {v.turn_seq}: {v.ruling.verdict}")
        if v.ruling.reasons.strip():
            lines.append(quoted(_one_line(v.ruling.reasons)))
    return "\n".join(lines)


def _messages(history: History) -> list[str]:
    if not history.messages:
        return []
    left = PEOPLE_TEXT_BUDGET
    shown: list[tuple[int, int]] = []  # (index, characters of it shown), newest first
    for i in range(len(history.messages) - 1, -1, -1):
        size = min(len(history.messages[i].text), HUMAN_TEXT_LIMIT)
        if size > left:
            if left < _SMALLEST_CUT:
                break
            size = left
        shown.append((i, size))
        left -= size
    first = min(i for i, _ in shown)
    lines = ["## Messages from people"]
    if first > 0:
        dropped = history.messages[:first]
        chars = sum(len(m.text) for m in dropped)
        lines.append(
            f"[{len(dropped)} older messages ({chars} characters) are left out here; "
            "they are stored with the task]"
        )
    for i, size in sorted(shown):
        m = history.messages[i]
        tag = " (answer to an escalation)" if m.kind == "answer" else ""
        lines.append(f"- {_one_line(m.user)}{tag} wrote:")
        lines.append(quoted(_bounded(m.text, size, "this message")))
    return ["\n".join(lines)]


def _rulings(history: History) -> list[str]:
    if not history.verdicts:
        return []
    return ["## Rulings so far", _prior_rulings(history.verdicts)]


def _recent_turns(
    history: History,
    count: int,
    seats: Mapping[str, str] | None,
    since: int | None = None,
    budget: int = 4000,
) -> list[str]:
    turns = [t for t in history.pair_done if since is None or t.seq > since]
    recent = turns[-count:] if count > 0 else []
    if not recent:
        return []
    # The newest turns in full while they fit the budget (the newest always); the rest of the
    # recent ones, and the older ones, one line each, the newest of them last.
    full: list[Turn] = []
    used = 0
    for turn in reversed(recent):
        size = min(len(turn.output), _OUTPUT_LIMIT)
        if full and used + size > budget:
            break
        full.insert(0, turn)
        used += size
    older = turns[: len(turns) - len(full)][-_SUMMARY_LINES:]
    skipped = len(turns) - len(full) - len(older)
    parts = []
    if older:
        lines = ["## Earlier turns, one line each"]
        if skipped:
            lines.append(f"({skipped} earlier turns are not listed; all are stored)")
        lines += [_line(t, seats) for t in older]
        parts.append("\n".join(lines))
    rulings = {v.turn_id: v.ruling for v in history.verdicts}
    return (
        parts
        + ["## Recent turns (oldest first)"]
        + [_quote(t, rulings.get(t.id), seats) for t in full]
    )


def ruling_text(ruling: Ruling) -> str:
    """A ruling in words, as the arbiter's turn is shown to the others: its output may be the
    raw JSON of a structured answer, which reads badly and quotes field names as if they were
    the engine's."""
    lines = [f"VERDICT: {ruling.verdict}" if ruling.readable else "(no readable verdict)"]
    if ruling.reasons.strip():
        lines.append(ruling.reasons.strip())
    if ruling.conditions:
        lines += ["Conditions:"] + [f"- {c}" for c in ruling.conditions]
    if ruling.new_direction.strip():
        lines.append(f"New direction: {ruling.new_direction.strip()}")
    if ruling.question.strip():
        lines.append(f"Question for the people: {ruling.question.strip()}")
        lines += [f"- {o}" for o in ruling.options]
    if ruling.dissent.strip():
        lines.append(f"Dissent: {ruling.dissent.strip()}")
    return "\n".join(lines)


def _line(turn: Turn, seats: Mapping[str, str] | None) -> str:
    role = f"Position {seats[turn.role]}" if seats and turn.role in seats else turn.role
    marker = f" {turn.marker}" if turn.marker and not (seats and turn.role in seats) else ""
    text = _one_line_head(turn.output, _LINE_CHARS)
    if seats:
        text = _one_line(mask_roles(without_marker(turn.output, turn.role), seats))
    if len(text) > _LINE_CHARS:
        text = text[: _LINE_CHARS - 1] + "…"
    return f"- turn {turn.seq}, {role}{marker}: {text}"


def _quote(turn: Turn, ruling: Ruling | None = None, seats: Mapping[str, str] | None = None) -> str:
    text = ruling_text(ruling) if ruling is not None and ruling.readable else turn.output
    output = _bounded(text.strip(), _OUTPUT_LIMIT, "this output")
    if seats:
        if turn.role in seats:
            masked = mask_roles(without_marker(output, turn.role), seats)
            return f"### Turn {turn.seq}: Position {seats[turn.role]}\n{quoted(masked)}"
        output = mask_roles(output, seats)  # other turns (earlier rulings) name the sides too
    marker = f" — {turn.marker}" if turn.marker else ""
    return f"### Turn {turn.seq}: {turn.role}{marker}\n{quoted(output)}"


def _your_turn(phase: str, role: str) -> list[str]:
    if phase == FINALIZE:
        return [
            "## Your turn: wrap up",
            "The reviewer approved the work. Finish it: tidy up, make sure it is complete, and "
            "summarise what was done for the people in the room. Change the work only if it is "
            "really needed: any change sends it back to the reviewer.",
        ]
    return [
        "## Your turn",
        f"Begin your answer with one marker line: {_MARKERS.get(role, '')}.",
    ]
