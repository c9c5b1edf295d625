"""The prompt of each turn, built from the store (DESIGN §2: agents read each other through the
store, never by scraping the chat).

Every prompt carries the task, the people's messages, the latest turn outputs and the rulings so
far; the arbiter also gets the detector's reason and the counts; the owner after a REVISE or
RESET gets the ruling's conditions or new direction at the top, since that is what it must act on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rooms.history import History
from rooms.judge.sendback import earlier_send_back, resend_prompt
from rooms.model import GroupPolicy, Summon, Task, Turn
from rooms.pair.states import FINALIZE
from rooms.records import VerdictRow

_MARKERS = {
    "owner": "DONE, NEEDS_CONTEXT or BLOCKED",
    "reviewer": "APPROVED, CHANGES_REQUESTED, NEEDS_CONTEXT or BLOCKED",
    "arbiter": "PROCEED, REVISE, RESET or ESCALATE (as `VERDICT: <word>`)",
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


def quoted(text: str) -> str:
    """Text written by a person or an agent, as a Markdown quote: every line starts with "> ",
    so nothing in it can pass for one of the engine's own sections, an escalation answer or a
    ruling in the prompt (the prompt is the one place where all of them meet)."""
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines()) or ">"


def _one_line(text: str) -> str:
    return " ".join(text.split())


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
    if role == "owner":
        parts += _ruling_to_act_on(history)
    if role == "arbiter":
        parts += _arbiter_frame(task, history, policy, reason)
    # The people's messages and the rulings are always quoted whole, resumed or not: they are
    # few and bounded, and an agent must never lose sight of them.
    parts += _messages(history)
    if role != "arbiter":
        parts += _rulings(history)
    parts += _recent_turns(history, policy.recent_turns, seats, since, policy.recent_chars)
    parts += list(extra)
    parts += _your_turn(phase, role)
    return "\n\n".join(p for p in parts if p)


def _ruling_to_act_on(history: History) -> list[str]:
    """A REVISE/RESET that no owner turn has answered yet."""
    if not history.verdicts:
        return []
    latest = history.verdicts[-1]
    answered = any(
        t.role == "owner" and t.seq > latest.turn_seq and t.status == "done" for t in history.turns
    )
    ruling = latest.ruling
    if answered or ruling.verdict not in ("REVISE", "RESET"):
        return []
    if ruling.verdict == "RESET":
        lines = ["## The arbiter ruled RESET: start over in this direction", ruling.new_direction]
    else:
        lines = ["## The arbiter ruled REVISE: meet these conditions"]
        lines += [f"- {c}" for c in ruling.conditions] or [ruling.reasons]
    if ruling.reasons and ruling.verdict == "RESET":
        lines.append(f"Why: {ruling.reasons}")
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
    lines = ["Prior rulings:"] + [
        f"- turn {v.turn_seq}: {v.ruling.verdict}: {_one_line(v.ruling.reasons)}" for v in verdicts
    ]
    return "\n".join(lines)


def _messages(history: History) -> list[str]:
    if not history.messages:
        return []
    lines = ["## Messages from people"]
    for m in history.messages:
        tag = " (answer to an escalation)" if m.kind == "answer" else ""
        lines.append(f"- {_one_line(m.user)}{tag} wrote:")
        lines.append(quoted(_bounded(m.text, HUMAN_TEXT_LIMIT, "this message")))
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
    turns = [t for t in history.done if since is None or t.seq > since]
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
    return parts + ["## Recent turns (oldest first)"] + [_quote(t, seats) for t in full]


def _line(turn: Turn, seats: Mapping[str, str] | None) -> str:
    role = f"Position {seats[turn.role]}" if seats and turn.role in seats else turn.role
    marker = f" {turn.marker}" if turn.marker and not (seats and turn.role in seats) else ""
    text = _one_line(turn.output)
    if seats:
        from rooms.judge.positions import mask_roles, without_marker

        text = _one_line(mask_roles(without_marker(turn.output, turn.role), seats))
    if len(text) > _LINE_CHARS:
        text = text[: _LINE_CHARS - 1] + "…"
    return f"- turn {turn.seq}, {role}{marker}: {text}"


def _quote(turn: Turn, seats: Mapping[str, str] | None = None) -> str:
    output = _bounded(turn.output.strip(), _OUTPUT_LIMIT, "this output")
    if seats:
        # Here, not at the top: rooms.judge.positions quotes with this module's `quoted`.
        from rooms.judge.positions import mask_roles, without_marker

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
