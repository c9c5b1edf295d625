"""One round of the arena's debate: read the experts' messages, apply the moderator's
interventions and the convergence tree, and produce the commentary the gate lets through."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rooms.arena.commentary import Gate, offer
from rooms.arena.convergence import Board, Decision, decide
from rooms.arena.limits import ArenaLimits
from rooms.arena.moderation import Member, Said, interventions
from rooms.arena.outputs import ExpertMessage
from rooms.arena.state import ArenaState, Contest, Seat, Spoken
from rooms.judge.structured import StructuredError, read_object
from rooms.phased.deliberation import Post, Reply

NUDGE = "You have not weighed in yet. Where do you stand, and on what evidence?"
FINAL_CALL = "Time is up: send your final position (kind `final`) with its evidence."
IDLE_CALL = "Nobody added anything this round: send your final position (kind `final`)."


def asked_this_round(state: ArenaState) -> list[str]:
    """The experts the next round asks: everyone still in who has not sent a final position;
    while a veto is put to the panel, the finals too."""
    return [s.slug for s in state.active() if s.final is None or state.veto_round]


@dataclass
class _Output:
    """What a round has to say so far: its posts in order, and the events (kind, text) the
    commentary gate may mention once the round is over."""

    posts: list[Post] = field(default_factory=list)
    events: list[tuple[str, str]] = field(default_factory=list)


def play_round(
    state: ArenaState, replies: Sequence[Reply], limits: ArenaLimits, now: float
) -> tuple[list[Post], Decision]:
    """Apply one round's replies to `state` (in place); the posts and the convergence decision.

    A round is three steps, in this order: the experts are heard, the moderator intervenes
    (nudges, leaves out, asks to arbitrate, calls for finals), and the convergence tree decides
    whether the debate goes on; then the commentary gate picks what to remark on."""
    out = _Output()
    asked = set(asked_this_round(state))
    state.round += 1
    heard = _hear(state, replies, asked, out)
    answered_veto = state.veto_round
    state.veto_round = False
    elapsed = now - state.started_at
    _moderate(state, limits, elapsed, out)
    decision = _converge(state, heard, limits, elapsed, answered_veto, out)
    out.posts += _commentary(state, out.events, limits, now)
    return out.posts, decision


def _hear(state: ArenaState, replies: Sequence[Reply], asked: set[str], out: _Output) -> list[Said]:
    """The replies of the experts asked this round, in order. One that cannot be read is
    reported and counts as silence (the moderator nudges); a pass is heard but says nothing."""
    heard: list[Said] = []
    round_tokens = []
    for reply in replies:
        seat = state.seat(reply.key.removeprefix("expert:"))
        if seat is None or seat.slug not in asked:
            continue
        round_tokens.append(reply.tokens)
        state.notes.pop(seat.slug, None)
        message, problem = _read(reply)
        if message is None:
            out.posts.append(
                Post("tribunal", f"⚠️ {seat.name}'s turn could not be used ({problem}).")
            )
            continue  # silent this round: the moderator nudges
        seat.nudges = 0
        valid = {s.slug for s in state.seats if s.slug != seat.slug}
        to = [t for t in dict.fromkeys(message.to) if t in valid]
        heard.append(Said(seat.slug, tuple(to), message.shifted, passed=message.kind == "pass"))
        if message.kind != "pass":
            _take(state, seat, to, valid, message, out)
    state.expert_tokens.append(round_tokens)
    state.said.append([(s.speaker, list(s.to), s.shifted, s.passed) for s in heard])
    return heard


def _take(
    state: ArenaState, seat: Seat, to: list[str], valid: set[str], m: ExpertMessage, out: _Output
) -> None:
    """What one expert's message changes: the thread, the seat's stance, the ratings it
    contests (only with the contested evidence and a rating of its own), its final position,
    and the devil's advocate's veto."""
    state.thread.append(Spoken(round=state.round, speaker=seat.slug, to=to, message=m))
    seat.last = m
    if m.stance:
        seat.stance = m.stance
    out.posts.append(Post(seat.slug, _render(seat.name, to, m)))
    if m.shifted:
        out.events.append(("shift", f"{seat.name} shifts position: {m.stance}"))
    for c in m.challenges:
        if c.evidence and c.r is not None and c.cl is not None and c.target in valid:
            state.contests.append(
                Contest(evidence=c.evidence, by=seat.slug, r=c.r, cl=c.cl, why=c.weakness)
            )
            out.events.append(
                ("rating_contested", f"{seat.name} contests the rating of “{c.evidence}”")
            )
    if m.kind == "final":
        seat.final = m
        out.events.append(("final", f"{seat.name} sends a final position: {m.stance}"))
    if seat.devil and m.veto == "raise":
        state.veto, state.veto_reason = "standing", m.veto_reason or m.text
        out.events.append(("veto", f"{seat.name} vetoes: {state.veto_reason}"))
    elif seat.devil and m.veto == "withdraw" and state.veto == "standing":
        state.veto = "withdrawn"
        out.events.append(("veto_withdrawn", f"{seat.name} withdraws the veto"))


def _moderate(state: ArenaState, limits: ArenaLimits, elapsed: float, out: _Output) -> None:
    """The moderator's interventions (rooms/arena/moderation.py decides them from the whole
    history of who said what; here they take effect, as notes for the next prompts and posts)."""
    members = [Member(s.slug, s.devil, s.nudges, s.out, s.final is not None) for s in state.seats]
    history = [[Said(a, tuple(b), c, d) for a, b, c, d in r] for r in state.said]
    arbitrated = frozenset((a, b) for a, b in state.arbitrated)
    for step in interventions(
        members,
        history,
        limits,
        elapsed_s=elapsed,
        final_called=state.final_called,
        arbitrated=arbitrated,
    ):
        seat = state.seat(step.to) if step.to else None
        if step.kind == "nudge" and seat is not None:
            seat.nudges += 1
            _note(state, seat.slug, NUDGE)
            out.posts.append(
                Post(
                    "tribunal",
                    f"👋 {seat.name}, we have not heard from you "
                    f"({seat.nudges}/{limits.max_nudges}).",
                )
            )
        elif step.kind == "leave_out" and seat is not None:
            seat.out, seat.out_reason = True, f"silent after {limits.max_nudges} nudges"
            out.events.append(
                ("left_out", f"{seat.name} is left out ({seat.out_reason}); the arena goes on")
            )
        elif step.kind == "arbitrate" and seat is not None and step.between is not None:
            a, b = step.between
            state.arbitrated.append((a, b))
            _note(
                state,
                seat.slug,
                f"{a} and {b} are going round in circles: arbitrate between them, with evidence.",
            )
            out.events.append(
                ("arbitration", f"{seat.name} is asked to arbitrate between {a} and {b}")
            )
        elif step.kind == "final_call":
            state.final_called = True
            for s in state.active():
                _note(state, s.slug, FINAL_CALL)
            out.posts.append(Post("tribunal", "⏱️ Time is up: every expert sends a final position."))


def _converge(
    state: ArenaState,
    heard: list[Said],
    limits: ArenaLimits,
    elapsed: float,
    answered_veto: bool,
    out: _Output,
) -> Decision:
    """The convergence tree's decision on the board after this round, and what the room is
    told when it calls for finals or puts the veto to the panel. `answered_veto`: this round
    was the panel's answer to a veto put to it."""
    board = Board(
        active=len(state.active()),
        finals=sum(1 for s in state.active() if s.final is not None),
        idle=all(s.passed for s in heard),
        rounds=state.round,
        elapsed_s=elapsed,
        final_called=state.final_called,
        veto=state.veto,
        veto_put=state.veto_put or answered_veto,
    )
    decision = decide(board, limits)
    if decision.kind == "call_finals":
        state.final_called = True
        for s in state.active():
            _note(state, s.slug, IDLE_CALL)
        out.posts.append(
            Post("tribunal", "⏱️ Nobody added anything: every expert sends a final position.")
        )
    elif decision.kind == "put_veto":
        state.veto_put = True
        state.veto_round = True
        out.posts.append(
            Post(
                "tribunal",
                f"✋ The devil's advocate's veto is put to the whole panel: {state.veto_reason}",
            )
        )
    return decision


def _read(reply: Reply) -> tuple[ExpertMessage | None, str]:
    if reply.error is not None:
        return None, f"the run failed: {reply.error}"
    try:
        return read_object(reply.output, reply.structured, ExpertMessage), ""
    except StructuredError as exc:
        return None, str(exc)


def _note(state: ArenaState, slug: str, text: str) -> None:
    state.notes.setdefault(slug, []).append(text)


def _render(name: str, to: list[str], m: ExpertMessage) -> str:
    head = f"**{name}** → {', '.join(to) if to else 'everyone'} ({m.kind})"
    lines = [head, m.text.strip() or m.stance]
    if m.evidence:
        lines.append(
            "Evidence: "
            + "; ".join(f"{e.title} (R {e.r:.1f}, CL {e.cl:.1f})" for e in m.evidence[:6])
        )
    for c in m.challenges:
        lines.append(f"Challenge to {c.target}: {c.weakness}")
    if m.veto != "none":
        lines.append(f"Veto {m.veto}: {m.veto_reason}")
    return "\n".join(lines)


def _commentary(
    state: ArenaState, events: list[tuple[str, str]], limits: ArenaLimits, now: float
) -> list[Post]:
    gate = Gate(tuple(state.posted_at), state.held)
    posts = []
    for kind, text in events:
        verdict = offer(gate, kind, now, limits)
        gate = verdict.gate
        if verdict.post:
            more = (
                f" (and {verdict.held_before} more since the last comment)"
                if verdict.held_before
                else ""
            )
            posts.append(Post("tribunal", f"🎙️ {text}{more}"))
    state.posted_at, state.held = list(gate.posted_at), gate.held
    return posts
