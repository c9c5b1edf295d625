"""The arena as a machine over its state: panel → research → debate rounds → synthesis.

- panel: the moderator proposes the panel; a panel outside the limits goes back once.
- research: the researchers run at once, one shot each; a failed researcher leaves a gap in the
  briefing and the arena goes on.
- debate: every expert still in speaks at once each round (rooms.arena.rounds); the moderator's
  interventions and the convergence tree decide what happens next.
- synthesis: the synthesizer writes the narrative; trust and levels are computed; the document
  is saved as docs/arena/YYYY-MM-DD-<topic>.md in the worktree and posted.
"""

from __future__ import annotations

from collections.abc import Sequence

from rooms.arena.catalog import Entry, Position, Standing, build_catalog, standings
from rooms.arena.evidence import Evidence, Rating
from rooms.arena.limits import ArenaLimits
from rooms.arena.outputs import (
    EXPERT_SCHEMA,
    PANEL_SCHEMA,
    SYNTHESIS_SCHEMA,
    PanelProposal,
    SynthesisNarrative,
)
from rooms.arena.panel import panel_problems
from rooms.arena.prompting import (
    compile_briefing,
    expert_prompt,
    moderator_prompt,
    researcher_prompt,
    synthesizer_prompt,
)
from rooms.arena.rounds import asked_this_round, play_round
from rooms.arena.state import ArenaState, Seat
from rooms.arena.synthesis import ARENA_DIR, Synthesis, render, synthesis_path
from rooms.judge.structured import StructuredError, read_object
from rooms.phased.deliberation import RETRIES, Ask, Conclusion, Post, Reply, charge, retry_note

MODERATOR, SYNTHESIZER = "moderator", "synthesizer"
# The actors' prompt files (prompts/<role>.md), which a group may replace.
MODERATOR_ROLE = "arena-moderator"
RESEARCHER_ROLE = "arena-researcher"
EXPERT_ROLE = "arena-expert"
SYNTHESIZER_ROLE = "arena-synthesizer"
PROMPT_ROLES = (MODERATOR_ROLE, RESEARCHER_ROLE, EXPERT_ROLE, SYNTHESIZER_ROLE)


def start(question: str) -> ArenaState:
    return ArenaState(question=" ".join(question.split()))


def plan(state: ArenaState, limits: ArenaLimits) -> list[Ask]:
    if state.phase == "panel":
        return [
            _ask(state, MODERATOR, MODERATOR_ROLE, moderator_prompt(state, limits), PANEL_SCHEMA)
        ]
    if state.phase == "research":
        return [
            Ask(
                f"researcher:{i}",
                RESEARCHER_ROLE,
                researcher_prompt(state, focus),
            )
            for i, focus in enumerate(state.researchers, start=1)
            if f"researcher:{i}" not in state.findings
            and f"researcher:{i}" not in state.research_failed
        ]
    if state.phase == "debate":
        return [
            Ask(
                f"expert:{slug}",
                EXPERT_ROLE,
                expert_prompt(state, seat, limits),
                dict(EXPERT_SCHEMA),
            )
            for slug in asked_this_round(state)
            if (seat := state.seat(slug)) is not None
        ]
    if state.phase == "synthesis":
        return [
            _ask(
                state,
                SYNTHESIZER,
                SYNTHESIZER_ROLE,
                synthesizer_prompt(state, _table(state)),
                SYNTHESIS_SCHEMA,
            )
        ]
    return []


def advance(
    state: ArenaState, replies: Sequence[Reply], limits: ArenaLimits, now: float
) -> tuple[ArenaState, list[Post], Conclusion | None]:
    s = state.model_copy(deep=True)
    for reply in replies:
        charge(s, reply)
    if s.phase == "panel":
        return _panel(s, replies, limits)
    if s.phase == "research":
        return _research(s, replies, now)
    if s.phase == "debate":
        posts, decision = play_round(s, replies, limits, now)
        if decision.kind == "fail":
            s.phase, s.failure = "failed", decision.reason
            posts.append(Post("tribunal", f"⚠️ The arena failed: {decision.reason}."))
            return s, posts, _failed(s)
        if decision.kind == "synthesize":
            s.phase, s.ended_because = "synthesis", decision.reason
            if decision.dissent:
                s.dissent = s.veto_reason
            posts.append(
                Post(
                    "tribunal", f"🏁 The debate is over ({decision.reason}). Writing the synthesis."
                )
            )
        return s, posts, None
    if s.phase == "synthesis":
        return _synthesis(s, replies, now)
    return s, [], None


def _panel(
    s: ArenaState, replies: Sequence[Reply], limits: ArenaLimits
) -> tuple[ArenaState, list[Post], Conclusion | None]:
    (reply,) = replies
    try:
        if reply.error is not None:
            raise StructuredError(f"the run failed: {reply.error}")
        panel = read_object(reply.output, reply.structured, PanelProposal)
        problems = panel_problems(panel, limits)
        if problems:
            raise StructuredError("; ".join(problems))
    except StructuredError as exc:
        return _retry_or_fail(s, MODERATOR, str(exc))
    s.problems.pop(MODERATOR, None)
    s.topic, s.code_question = panel.topic, panel.code_question
    s.seats = [
        Seat(
            slug=e.slug,
            name=e.name,
            angle=e.angle,
            persona=e.persona,
            expected=e.expected_position,
            devil=e.devil_advocate,
        )
        for e in panel.experts
    ]
    s.researchers = [r.focus for r in panel.researchers]
    rows = "\n".join(
        f"| {_cell(e.name)} | `{e.slug}` | {_cell(e.angle)}"
        f"{' — devil’s advocate (veto)' if e.devil_advocate else ''} |"
        for e in panel.experts
    )
    text = (
        f"🏟️ **Expert arena:** {s.question}\n\n"
        f"| Expert | Slug | Angle |\n| --- | --- | --- |\n{rows}\n\n"
        f"The arena is preparing: {len(s.researchers)} researchers gather context."
    )
    s.phase = "research"
    return s, [Post("tribunal", text)], None


def _research(
    s: ArenaState, replies: Sequence[Reply], now: float
) -> tuple[ArenaState, list[Post], Conclusion | None]:
    for reply in replies:
        if reply.error is not None or not reply.output.strip():
            s.research_failed.append(reply.key)
        else:
            s.findings[reply.key] = reply.output
    s.briefing = compile_briefing(s)
    s.phase, s.started_at = "debate", now
    gap = (
        f" ({len(s.research_failed)} researcher(s) failed: a reduced briefing)"
        if s.research_failed
        else ""
    )
    return s, [Post("tribunal", f"⚔️ Context gathered{gap}. The experts enter the arena.")], None


def _synthesis(
    s: ArenaState, replies: Sequence[Reply], now: float
) -> tuple[ArenaState, list[Post], Conclusion | None]:
    (reply,) = replies
    try:
        if reply.error is not None:
            raise StructuredError(f"the run failed: {reply.error}")
        s.narrative = read_object(reply.output, reply.structured, SynthesisNarrative)
    except StructuredError as exc:
        if s.attempts.get(SYNTHESIZER, 0) < RETRIES:
            return _retry_or_fail(s, SYNTHESIZER, str(exc))
        # The debate happened and its positions are computed: save them, saying what is missing.
        s.narrative = SynthesisNarrative(
            status="none",
            verdict=f"(The synthesizer failed: {exc}. The computed positions below stand alone.)",
            recommendation="(none: the synthesizer failed; read the trust summary)",
        )
    s.phase = "done"
    conclusion = conclude(s, now)
    return s, [Post("tribunal", conclusion.summary)], conclusion


def positions(s: ArenaState) -> list[Position]:
    out = []
    for seat in s.seats:
        message = seat.final or seat.last
        if message is None:
            continue
        evidence = tuple(
            Evidence(e.title, e.source, e.r, e.cl, e.load_bearing, seat.slug)
            for e in message.evidence
        )
        out.append(
            Position(
                seat.slug,
                seat.name,
                message.stance or seat.stance or "(no stance stated)",
                evidence,
                final=seat.final is not None,
            )
        )
    return out


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _catalog_and_standings(s: ArenaState) -> tuple[list[Entry], list[Standing]]:
    found = positions(s)
    contests = [(c.evidence, Rating(c.by, c.r, c.cl, c.why)) for c in s.contests]
    chosen = {
        " ".join(c.evidence.lower().split()).rstrip("/."): c.chosen
        for c in (s.narrative.contested if s.narrative else [])
    }
    catalog = build_catalog(found, contests, chosen)
    return catalog, standings(found, catalog)


def _table(s: ArenaState) -> str:
    _, rows = _catalog_and_standings(s)
    return (
        "\n".join(
            f"- {r.position.champion}: {r.position.stance} — {r.level}, trust {r.trust:.2f} "
            f"({'final' if r.position.final else 'last message'})"
            for r in rows
        )
        or "(no positions)"
    )


def conclude(s: ArenaState, now: float) -> Conclusion:
    assert s.narrative is not None
    catalog, rows = _catalog_and_standings(s)
    synthesis = Synthesis(
        question=s.question,
        experts=tuple((seat.slug, seat.name) for seat in s.seats),
        standings=tuple(rows),
        catalog=tuple(catalog),
        narrative=s.narrative,
        dissent=s.dissent,
        ended_because=s.ended_because,
        left_out=tuple(f"{seat.name} ({seat.out_reason})" for seat in s.seats if seat.out),
    )
    document = render(synthesis, now)
    path = synthesis_path(s.topic or s.question, now)
    lead = (
        f" Leading position: {rows[0].position.stance}"
        f" ({rows[0].level}, trust {rows[0].trust:.2f})."
        if rows
        else ""
    )
    dissent = f"\nRecorded dissent (standing veto): {s.dissent}" if s.dissent else ""
    summary = (
        f"🏟️ **Arena concluded.** {s.narrative.verdict}{lead}{dissent}\n"
        f"The synthesis is saved under `{ARENA_DIR}/`. The experts recommend; you decide."
    )
    return Conclusion(f"Arena: {s.question}", summary, document, files={path: document})


def _retry_or_fail(
    s: ArenaState, key: str, problem: str
) -> tuple[ArenaState, list[Post], Conclusion | None]:
    s.attempts[key] = s.attempts.get(key, 0) + 1
    if s.attempts[key] > RETRIES:
        s.phase, s.failure = "failed", f"the {key}'s answer could not be used twice: {problem}"
        return s, [Post("tribunal", f"⚠️ The arena failed: {s.failure}.")], _failed(s)
    s.problems[key] = problem
    return (
        s,
        [
            Post(
                "tribunal", f"↻ The {key}'s answer could not be used ({problem}); asking once more."
            )
        ],
        None,
    )


def _failed(s: ArenaState) -> Conclusion:
    return Conclusion(
        f"Arena: {s.question}",
        f"⚠️ The arena could not finish: {s.failure}.",
        f"# Expert arena: {s.question}\n\nThe arena failed: {s.failure}.\n",
        failed=True,
    )


def _ask(s: ArenaState, key: str, role: str, prompt: str, schema: dict[str, object]) -> Ask:
    problem = s.problems.get(key)
    return Ask(
        key,
        role,
        prompt + (retry_note(problem) if problem else ""),
        dict(schema),
    )
