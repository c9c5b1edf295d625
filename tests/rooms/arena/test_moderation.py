"""The moderator's intervention table and the convergence tree, as tables."""

from __future__ import annotations

import pytest

from rooms.arena.convergence import Board, Decision, decide
from rooms.arena.limits import ArenaLimits, LimitsError
from rooms.arena.moderation import Intervention, Member, Said, interventions, loop_pair

LIMITS = ArenaLimits()
PANEL = (Member("ada"), Member("bo"), Member("cy"), Member("dee", devil=True))


def everyone_speaks() -> list[Said]:
    return [Said(m.slug) for m in PANEL]


def with_member(slug: str, **changes: object) -> tuple[Member, ...]:
    return tuple(
        Member(**{**m.__dict__, **changes}) if m.slug == slug else m  # type: ignore[arg-type]
        for m in PANEL
    )


@pytest.mark.parametrize(
    ("members", "last_round", "expected"),
    [
        # everyone spoke: the moderator stays out
        (PANEL, everyone_speaks(), []),
        # silent once, twice: a nudge each time
        (PANEL, [Said("ada"), Said("bo"), Said("dee")], [Intervention("nudge", "cy")]),
        (
            with_member("cy", nudges=1),
            [Said("ada"), Said("bo"), Said("dee")],
            [Intervention("nudge", "cy")],
        ),
        # silent after 2 nudges: left out, and the arena goes on with the rest
        (
            with_member("cy", nudges=2),
            [Said("ada"), Said("bo"), Said("dee")],
            [Intervention("leave_out", "cy")],
        ),
        # an expert with a final position has said their piece: no nudge
        (with_member("cy", final=True), [Said("ada"), Said("bo"), Said("dee")], []),
        # an expert already out is not nudged again
        (with_member("cy", out=True), [Said("ada"), Said("bo"), Said("dee")], []),
    ],
)
def test_silent_experts(
    members: tuple[Member, ...], last_round: list[Said], expected: list[Intervention]
) -> None:
    assert interventions(members, [last_round], LIMITS, elapsed_s=0, final_called=False) == expected


def loop_round(*, shifted: bool = False) -> list[Said]:
    return [Said("ada", ("bo",)), Said("bo", ("ada",), shifted=shifted), Said("cy"), Said("dee")]


def test_a_loop_between_two_gets_a_third_expert_who_is_not_the_devils_advocate() -> None:
    rounds = [loop_round()] * LIMITS.loop_exchanges
    assert loop_pair(rounds, LIMITS.loop_exchanges) == ("ada", "bo")
    got = interventions(PANEL, rounds, LIMITS, elapsed_s=0, final_called=False)
    assert got == [Intervention("arbitrate", "cy", between=("ada", "bo"))]
    # once per loop: a pair already sent to arbitration is not sent again
    again = interventions(
        PANEL,
        rounds,
        LIMITS,
        elapsed_s=0,
        final_called=False,
        arbitrated=frozenset({("ada", "bo")}),
    )
    assert again == []


@pytest.mark.parametrize(
    "rounds",
    [
        [loop_round()] * (LIMITS.loop_exchanges - 1),  # not long enough yet
        [loop_round(), loop_round(shifted=True), loop_round()],  # a shift is progress
        [loop_round(), everyone_speaks(), loop_round()],  # broken by a round of open debate
        [
            loop_round(),
            [Said("ada", ("bo", "cy")), Said("bo", ("ada",))],
            loop_round(),
        ],  # cy drawn in
    ],
)
def test_no_loop(rounds: list[list[Said]]) -> None:
    assert loop_pair(rounds, LIMITS.loop_exchanges) is None


def test_the_devils_advocate_arbitrates_when_nobody_else_can() -> None:
    members = (Member("ada"), Member("bo"), Member("dee", devil=True))
    rounds = [[Said("ada", ("bo",)), Said("bo", ("ada",)), Said("dee")]] * LIMITS.loop_exchanges
    got = interventions(members, rounds, LIMITS, elapsed_s=0, final_called=False)
    assert got == [Intervention("arbitrate", "dee", between=("ada", "bo"))]


@pytest.mark.parametrize(
    ("rounds", "elapsed", "called", "expected"),
    [
        (1, LIMITS.soft_time_s, False, [Intervention("final_call")]),
        (LIMITS.max_rounds, 0.0, False, [Intervention("final_call")]),
        (LIMITS.max_rounds, LIMITS.soft_time_s, True, []),  # asked once only
        (1, LIMITS.soft_time_s - 1, False, []),
    ],
)
def test_the_final_call(
    rounds: int, elapsed: float, called: bool, expected: list[Intervention]
) -> None:
    history = [everyone_speaks()] * rounds
    assert interventions(PANEL, history, LIMITS, elapsed_s=elapsed, final_called=called) == expected


def board(**fields: object) -> Board:
    base: dict[str, object] = {
        "active": 4,
        "finals": 0,
        "idle": False,
        "rounds": 2,
        "elapsed_s": 60.0,
        "final_called": False,
    }
    base.update(fields)
    return Board(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "kind", "dissent"),
    [
        (board(), "continue", False),
        (board(finals=2), "continue", False),
        (board(finals=3), "synthesize", False),  # 3 final positions of 4
        (board(active=2, finals=2), "synthesize", False),  # all the experts left
        (board(active=1, finals=1), "fail", False),  # fewer than 2 experts left
        (board(active=0), "fail", False),
        # a veto: put to everyone first; withdrawn → normal; standing → recorded dissent
        (board(finals=3, veto="standing"), "put_veto", False),
        (board(finals=3, veto="standing", veto_put=True), "synthesize", True),
        (board(finals=3, veto="withdrawn", veto_put=True), "synthesize", False),
        # idle: ask for finals, then end with what there is
        (board(idle=True), "call_finals", False),
        (board(idle=True, final_called=True), "synthesize", False),
        (board(idle=True, final_called=True, veto="standing"), "synthesize", True),
        # time and rounds
        (board(elapsed_s=LIMITS.hard_time_s), "synthesize", False),
        (board(elapsed_s=LIMITS.hard_time_s, veto="standing"), "synthesize", True),
        (board(rounds=LIMITS.max_rounds + 1, final_called=True), "synthesize", False),
        (board(rounds=LIMITS.max_rounds + 1), "continue", False),  # the final call comes first
    ],
)
def test_the_convergence_tree(state: Board, kind: str, dissent: bool) -> None:
    decision = decide(state, LIMITS)
    assert (decision.kind, decision.dissent) == (kind, dissent)
    assert isinstance(decision, Decision)


def test_a_failure_says_why() -> None:
    assert "only 1 expert(s) left" in decide(board(active=1), LIMITS).reason


@pytest.mark.parametrize(
    "fields",
    [
        {"panel_min": 6},  # above panel_max
        {"min_experts": 1},
        {"soft_time_s": 30 * 60.0},  # beyond the hard limit
        {"commentary_per_window": 0},
        {"loop_exchanges": 1},
    ],
)
def test_contradictory_limits_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(LimitsError):
        ArenaLimits(**fields)  # type: ignore[arg-type]
