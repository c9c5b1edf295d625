"""When the arena ends (the seed's convergence tree), as a pure decision per round.

1. Fewer than `min_experts` experts left: the arena fails, and says so.
2. Enough final positions (`final_positions`, or every expert still in when fewer are left):
   with the devil's advocate's veto standing, the veto is first put to everyone for one round;
   withdrawn, the arena ends normally; still standing, it ends with the veto recorded as
   dissent.
3. Everyone idle (nobody spoke this round): final positions are asked for; idle again after
   that, the arena ends with the positions there are.
4. The hard time limit, or a round past the final call with the round limit reached: it ends
   with the positions there are (a standing veto is still recorded as dissent).
5. Otherwise the debate goes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rooms.arena.limits import ArenaLimits

Veto = Literal["none", "standing", "withdrawn"]


@dataclass(frozen=True)
class Board:
    """What the convergence check needs to know after a round."""

    active: int  # experts still in
    finals: int  # of them, how many submitted a final position
    idle: bool  # nobody spoke in the round just ended
    rounds: int  # rounds of debate so far
    elapsed_s: float
    final_called: bool  # final positions were asked for already
    veto: Veto = "none"
    veto_put: bool = False  # the standing veto was put to everyone already


@dataclass(frozen=True)
class Decision:
    kind: Literal["continue", "fail", "call_finals", "put_veto", "synthesize"]
    reason: str = ""
    dissent: bool = False  # synthesize: the devil's advocate's veto is recorded as dissent


def decide(board: Board, limits: ArenaLimits) -> Decision:
    if board.active < limits.min_experts:
        return Decision(
            "fail", f"only {board.active} expert(s) left; a debate needs {limits.min_experts}"
        )
    needed = min(limits.final_positions, board.active)
    standing = board.veto == "standing"
    if board.finals >= needed:
        if standing and not board.veto_put:
            return Decision("put_veto", "the devil's advocate vetoes; everyone answers it")
        reason = f"{board.finals} final position(s)"
        if standing:
            return Decision("synthesize", reason + "; the veto stands", dissent=True)
        if board.veto == "withdrawn":
            reason += "; the veto was withdrawn"
        return Decision("synthesize", reason)
    if board.elapsed_s >= limits.hard_time_s:
        return Decision("synthesize", "the time limit was reached", dissent=standing)
    if board.idle:
        if board.final_called:
            return Decision("synthesize", "nobody has more to say", dissent=standing)
        return Decision("call_finals", "nobody spoke this round")
    if board.final_called and board.rounds > limits.max_rounds:
        return Decision("synthesize", "the round limit was reached", dissent=standing)
    return Decision("continue")
